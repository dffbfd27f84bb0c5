"""Errata of a benchmark's gold: the questions whose gold answer an audit judged wrong.

An errata file is JSON::

    {"dataset": "locomo",
     "errata": [{"question_id": "conv-26:q2", "corrected_answer": "...", "reason": "..."}]}

``dataset`` (optional) names the benchmark it audits; each entry names a question by
its himga question id, the corrected answer and the reason optional. dial481/locomo-audit's
``errors.json`` is read as it is published (:mod:`himga.benchmarks.locomo._audit`: its
citation-only entries are not gold errors) and is fetched, at the user's request, with
:func:`fetch_errata`. Errata are for reporting only: nothing of them reaches a memory,
the agent or the judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from himga._errors import HimgaError
from himga.benchmarks.locomo._audit import (
    AUDIT_LICENSE,
    AUDIT_SHA256,
    AUDIT_URL,
    audit_entries,
    is_audit,
)
from himga.data._download import download_file
from himga.data._resolve import cache_dir

__all__ = [
    "PUBLISHED_ERRATA",
    "Errata",
    "ErrataError",
    "Erratum",
    "PublishedErrata",
    "fetch_errata",
    "read_errata",
]


class ErrataError(HimgaError, ValueError):
    """An errata file that cannot be read, or a published one not fetched yet."""


@dataclass(frozen=True, slots=True)
class PublishedErrata:
    """An audit himga can fetch: where from, its pinned SHA-256 and its licence."""

    url: str
    sha256: str
    license: str
    dataset: str


#: The audits ``himga errata fetch NAME`` knows, by name.
PUBLISHED_ERRATA: Final[Mapping[str, PublishedErrata]] = {
    "locomo-audit": PublishedErrata(AUDIT_URL, AUDIT_SHA256, AUDIT_LICENSE, "locomo"),
}


@dataclass(frozen=True, slots=True)
class Erratum:
    """A question whose gold is wrong: the corrected answer and the reason when given."""

    question_id: str
    corrected_answer: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Errata:
    """The errata of one file: ``entries`` by question id, the benchmark it audits
    (``None``: not stated) and the file's ``source`` and ``sha256`` (for a manifest)."""

    source: str
    sha256: str
    dataset: str | None
    entries: Mapping[str, Erratum]


def _published_path(name: str) -> Path:
    return cache_dir() / "errata" / name / Path(PUBLISHED_ERRATA[name].url).name


def fetch_errata(name: str, *, show_progress: bool = True) -> Path:
    """Download the published errata ``name`` (:data:`PUBLISHED_ERRATA`) into the cache,
    verified against its pinned SHA-256, and return its path (at once if already there).

    :class:`ErrataError` for an unknown name; the download's own errors
    (:class:`~himga.data.DownloadError`, :class:`~himga.data.ChecksumMismatchError`).
    """
    if name not in PUBLISHED_ERRATA:
        raise ErrataError(f"unknown errata {name!r}; known: {', '.join(PUBLISHED_ERRATA)}")
    dest = _published_path(name)
    if dest.is_file():
        return dest
    return download_file(
        PUBLISHED_ERRATA[name].url,
        dest,
        sha256=PUBLISHED_ERRATA[name].sha256,
        show_progress=show_progress,
    )


def read_errata(source: str | Path) -> Errata:
    """The errata of the file ``source``, or of the published errata of that name once
    fetched (:func:`fetch_errata`).

    Raises :class:`ErrataError`, in one line naming the file and the entry, for a file
    that is missing, not JSON or not of either format, an entry without a question id,
    or a question named twice.
    """
    path = Path(source)
    if str(source) in PUBLISHED_ERRATA and not path.exists():
        path = _published_path(str(source))
        if not path.is_file():
            raise ErrataError(
                f"errata {source!r} not fetched yet: run `himga errata fetch {source}` "
                f"(licence {PUBLISHED_ERRATA[str(source)].license})"
            )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ErrataError(f"errata {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ErrataError(f"errata {path}: not JSON: {exc}") from None
    where = str(path)
    dataset: str | None
    if is_audit(data):
        assert isinstance(data, list)
        try:
            rows = audit_entries(data, where)
        except ValueError as exc:
            raise ErrataError(str(exc)) from None
        dataset = "locomo"
    elif isinstance(data, dict) and isinstance(data.get("errata"), list):
        dataset = data.get("dataset")
        if dataset is not None and not isinstance(dataset, str):
            raise ErrataError(f"errata {where}: 'dataset' must be a string, got {dataset!r}")
        rows = [_entry(entry, where, index) for index, entry in enumerate(data["errata"])]
    else:
        raise ErrataError(
            f'errata {where}: expected {{"errata": [...]}} or locomo-audit\'s errors.json'
        )
    entries: dict[str, Erratum] = {}
    for question_id, corrected, reason in rows:
        if question_id in entries:
            raise ErrataError(f"errata {where}: question {question_id!r} is named twice")
        entries[question_id] = Erratum(question_id, corrected, reason)
    return Errata(where, hashlib.sha256(raw).hexdigest(), dataset, entries)


def _entry(entry: object, where: str, index: int) -> tuple[str, str | None, str | None]:
    if not isinstance(entry, dict) or not isinstance(entry.get("question_id"), str):
        raise ErrataError(f"errata {where}: entry {index}: needs a string 'question_id'")
    values: list[str | None] = []
    for field in ("corrected_answer", "reason"):
        value = entry.get(field)
        if value is not None and not isinstance(value, str):
            raise ErrataError(f"errata {where}: entry {index}: {field!r} must be a string")
        values.append(value)
    return entry["question_id"], values[0], values[1]

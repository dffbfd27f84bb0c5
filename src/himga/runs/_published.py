"""Published claims: numbers others reported, with the conditions they were measured under.

``published.json`` (in this package) lists them; ``himga report --published`` and
``himga compare --published`` show those of the run's benchmark beside it, marked
"published, not re-run" and never merged into himga's own numbers: a claim's reader,
judge, judge prompt, k and categories are seldom a run's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from himga._errors import HimgaError

__all__ = [
    "PUBLISHED_FILE",
    "PublishedClaim",
    "PublishedError",
    "format_published",
    "load_published",
    "published_for",
]

#: The claims shipped with himga, in this package.
PUBLISHED_FILE = "published.json"

_TEXT = (str,)
_OPTIONAL_TEXT = (str, type(None))


class PublishedError(HimgaError, ValueError):
    """A published-claims file is malformed (the message names the file, claim and field)."""


@dataclass(frozen=True)
class PublishedClaim:
    """One published number: ``system`` scored ``score_percent`` on ``benchmark`` (a
    himga dataset name) by ``metric``, with ``reader`` and ``judge`` models, the
    ``judge_prompt``, retrieval depth ``k`` and the ``categories`` counted (each ``None``
    where the source does not say or it does not apply); ``source`` names the paper or
    page, ``url`` where it is and ``where`` the table or passage; ``note`` anything a
    reader must know to compare it."""

    system: str
    benchmark: str
    metric: str
    score_percent: float
    reader: str | None
    judge: str | None
    judge_prompt: str | None
    k: int | None
    categories: str
    source: str
    url: str
    where: str
    note: str | None = None


_FIELDS: Mapping[str, tuple[type, ...]] = {
    "system": _TEXT,
    "benchmark": _TEXT,
    "metric": _TEXT,
    "score_percent": (int, float),
    "reader": _OPTIONAL_TEXT,
    "judge": _OPTIONAL_TEXT,
    "judge_prompt": _OPTIONAL_TEXT,
    "k": (int, type(None)),
    "categories": _TEXT,
    "source": _TEXT,
    "url": _TEXT,
    "where": _TEXT,
    "note": _OPTIONAL_TEXT,
}
_REQUIRED = frozenset(_FIELDS) - {"note"}


def _claim(item: Any, where: str) -> PublishedClaim:
    """One claim, checked: :class:`PublishedError` naming ``where`` and the field."""
    if not isinstance(item, dict):
        raise PublishedError(f"{where}: expected an object, got {item!r}")
    unknown = sorted(set(item) - set(_FIELDS))
    if unknown:
        raise PublishedError(f"{where}: unknown field {unknown[0]!r}")
    missing = sorted(_REQUIRED - set(item))
    if missing:
        raise PublishedError(f"{where}: no field {missing[0]!r}")
    for name, kinds in _FIELDS.items():
        value = item.get(name)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise PublishedError(f"{where}.{name}: wrong type, got {value!r}")
        if isinstance(value, str) and not value.strip():
            raise PublishedError(f"{where}.{name}: empty")
    if not 0 <= item["score_percent"] <= 100:
        raise PublishedError(f"{where}.score_percent: not in [0, 100], got {item['score_percent']}")
    if item["k"] is not None and item["k"] < 1:
        raise PublishedError(f"{where}.k: must be >= 1, got {item['k']}")
    return PublishedClaim(**{**item, "score_percent": float(item["score_percent"])})


def load_published(path: Path | None = None) -> list[PublishedClaim]:
    """The claims of ``path`` (default: the file shipped with himga), a JSON object whose
    ``"claims"`` is a list of claims; :class:`PublishedError` naming the file and the claim
    of anything malformed."""
    name = str(path) if path is not None else f"himga.runs/{PUBLISHED_FILE}"
    try:
        text = (
            path.read_text("utf-8")
            if path is not None
            else resources.files("himga.runs").joinpath(PUBLISHED_FILE).read_text("utf-8")
        )
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PublishedError(f"{name}: cannot be read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise PublishedError(f'{name}: expected an object with a "claims" list')
    return [_claim(item, f"{name}: claims[{i}]") for i, item in enumerate(data["claims"])]


def published_for(
    benchmark: str, claims: Sequence[PublishedClaim] | None = None
) -> list[PublishedClaim]:
    """The claims on ``benchmark`` (a dataset name, e.g. ``locomo``), in file order."""
    found = load_published() if claims is None else claims
    return [claim for claim in found if claim.benchmark == benchmark]


def _cell(value: object) -> str:
    return "-" if value is None else str(value).replace("|", "\\|")


def format_published(benchmark: str, claims: Sequence[PublishedClaim]) -> list[str]:
    """The markdown lines of ``claims`` on ``benchmark``, titled as published and not
    re-run; one line saying there are none otherwise."""
    title = f"### Published, not re-run: claims on {benchmark}"
    if not claims:
        return [title, "", f"himga lists no published claim on {benchmark}."]
    lines = [
        title,
        "",
        "Numbers others published, under their own conditions (reader, judge, judge prompt, "
        "k, categories): not measured here, not comparable to the run's numbers unless "
        "every condition matches.",
        "",
        "| system | metric | score (%) | reader | judge | judge prompt | k | categories | source |",
        "| --- | --- | ---: | --- | --- | --- | ---: | --- | --- |",
    ]
    for c in claims:
        source = f"{c.source}, {c.where} (<{c.url}>)"
        lines.append(
            "| "
            + " | ".join(
                _cell(value)
                for value in (
                    c.system,
                    c.metric,
                    f"{c.score_percent:g}",
                    c.reader,
                    c.judge,
                    c.judge_prompt,
                    c.k,
                    c.categories,
                    source,
                )
            )
            + " |"
        )
    notes = [f"{c.system}: {c.note}" for c in claims if c.note]
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    return lines

"""The LoCoMo-Plus registrations: ``locomo-plus`` and ``locomo-plus-unified``.

* ``locomo-plus``: the 401 items of ``locomo_plus.json``, one sample each (its
  host conversation with the cue inserted, the trigger as the one question),
  categories the four relation types.
* ``locomo-plus-unified``: upstream's unified evaluation (``data/unified_input.py``):
  LoCoMo-10's ten conversations with their 1,986 questions as they are (no
  insertion), then the 401 LoCoMo-Plus samples; categories LoCoMo's five, then the
  four relation types. Every question carries ``gold["upstream_category"]``
  (upstream's name: ``multi-hop``, ``temporal``, ``common-sense``, ``single-hop``,
  ``adversarial`` or ``Cognitive``), which picks its judge template.

The host conversations are LoCoMo-10 as himga's LoCoMo loader reads it, found
beside ``locomo_plus.json`` (upstream's ``data/`` layout), in a ``locomo``
directory next to it or to its directory (a datasets directory such as
``../shared/datasets``), or where ``himga`` finds the ``locomo`` dataset
(``$HIMGA_DATA_DIR``, the cache).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from himga.benchmarks._protocol import Judge
from himga.benchmarks._resolve import resolve_dataset
from himga.benchmarks.locomo import (
    ADVERSARIAL,
    CATEGORIES,
    IMAGE_FORMAT,
    MULTI_HOP,
    OPEN_DOMAIN,
    SINGLE_HOP,
    TEMPORAL,
    find_locomo,
    iter_locomo,
)
from himga.benchmarks.locomo._loader import SINGLE_FILE, ZIP_FILE
from himga.benchmarks.locomo_plus._items import RELATION_TYPES, item_id, read_items
from himga.benchmarks.locomo_plus._judge import LocomoPlusJudge
from himga.benchmarks.locomo_plus._metrics import METRICS
from himga.benchmarks.locomo_plus._stitch import stitch
from himga.data._download import download_file
from himga.data._errors import DatasetError, DatasetNotFoundError, EvidenceWarning
from himga.data.schema import Sample

if TYPE_CHECKING:
    from himga.scoring._metric import Metric, RunMetric

__all__ = ["FILE", "LocomoPlus", "benchmarks"]

#: The file's name, upstream and here.
FILE = "locomo_plus.json"
_COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
_URL = f"https://raw.githubusercontent.com/xjtuleeyf/Locomo-Plus/{_COMMIT}/data/{FILE}"
_SHA256 = "af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23"
_URL_ENV = "HIMGA_LOCOMO_PLUS_URL"  # a mirror, or a test server
_DIRECTORIES = ("locomo-plus", "locomo_plus")
# LoCoMo's own file names: a host found by name, never by searching a directory.
HOST_FILES = (SINGLE_FILE, ZIP_FILE)
# Upstream's names of LoCoMo's categories (LOCOMO_CATEGORY_NAMES of unified_input.py,
# by the same official codes): code 3 is "common-sense" there, "open-domain" in himga.
_UPSTREAM_NAMES = {
    MULTI_HOP: "multi-hop",
    TEMPORAL: "temporal",
    OPEN_DOMAIN: "common-sense",
    SINGLE_HOP: "single-hop",
    ADVERSARIAL: "adversarial",
}


@dataclass(frozen=True)
class LocomoPlus:
    """LoCoMo-Plus as a :class:`~himga.benchmarks.Benchmark` (build it with :func:`benchmarks`).

    ``unified`` also yields LoCoMo-10 with its own questions first (upstream's
    unified evaluation); see the module documentation.
    """

    name: str
    description: str
    categories: Sequence[str]
    headline_excludes: frozenset[str]
    unified: bool
    judge: Judge | None = field(default_factory=LocomoPlusJudge)
    license: str = (
        "no licence file upstream (xjtuleeyf/Locomo-Plus); host conversations: "
        "LoCoMo-10, CC BY-NC 4.0"
    )
    metrics: Sequence[Metric | RunMetric] = METRICS

    def locate(self, directory: Path) -> Path | None:
        """``locomo_plus.json`` in ``directory`` or its ``locomo-plus`` / ``locomo_plus``."""
        for candidate in (directory, *(directory / d for d in _DIRECTORIES)):
            if (candidate / FILE).is_file():
                return candidate / FILE
        return None

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """Upstream's ``locomo_plus.json`` at a pinned commit (``$HIMGA_LOCOMO_PLUS_URL``
        overrides its URL), sha256-checked, into ``cache``; and LoCoMo-10 where himga
        keeps it (found, else downloaded)."""
        destination = cache / FILE
        url = os.environ.get(_URL_ENV) or _URL
        download_file(url, destination, sha256=_SHA256, show_progress=show_progress)
        resolve_dataset("locomo", show_progress=show_progress)
        return destination

    def guidance(self, cache: Path) -> str:
        return (
            f"download {_URL} (sha256 {_SHA256}) and save it as {cache / FILE} or "
            f"$HIMGA_DATA_DIR/locomo_plus/{FILE}; it is stitched into LoCoMo-10, "
            "which must be found too (`himga datasets locomo`)"
        )

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        """The samples, in order (see the module documentation); ``path`` is the
        ``locomo_plus.json`` file. Raises :class:`~himga.data.DatasetError` for a
        malformed item or host, :class:`~himga.data.DatasetNotFoundError` when
        LoCoMo-10 is nowhere to be found."""
        items = read_items(path)
        host_path = _host_path(path)
        with warnings.catch_warnings():
            if not self.unified:
                # The hosts' own questions are not asked here: their evidence quirks do not apply.
                warnings.simplefilter("ignore", EvidenceWarning)
            hosts = list(iter_locomo(host_path, self.name))
        if not hosts:
            raise DatasetNotFoundError(f"{host_path} holds no LoCoMo conversation to stitch into")
        if self.unified:
            for host in hosts:
                if wanted is None or host.sample_id in wanted:
                    yield _with_upstream_gold(host)
        for item in items:
            if wanted is None or item_id(item.index) in wanted:
                host = hosts[item.index % len(hosts)]
                try:
                    sample = stitch(item, host, dataset=self.name, host_file=str(host_path))
                except OverflowError:
                    raise DatasetError(
                        path,
                        f"{item.time_gap!r} ({item.gap_days:,} days) before the trigger puts "
                        f"the cue outside the calendar (years 1 to 9999)",
                        sample=f"{item_id(item.index)} (item #{item.index})",
                        field="time_gap",
                    ) from None
                yield sample


def benchmarks() -> tuple[LocomoPlus, LocomoPlus]:
    """Both registrations, ``locomo-plus`` and ``locomo-plus-unified`` (the entry point)."""
    return (
        LocomoPlus(
            name="locomo-plus",
            description=(
                "LoCoMo-Plus: 401 cue / trigger items (causal, state, goal, value) "
                "stitched into LoCoMo-10 conversations"
            ),
            categories=RELATION_TYPES,
            headline_excludes=frozenset(),
            unified=False,
        ),
        LocomoPlus(
            name="locomo-plus-unified",
            description=(
                "LoCoMo-Plus unified: LoCoMo-10's 1,986 questions on their own "
                "conversations, then the 401 LoCoMo-Plus items"
            ),
            categories=(*CATEGORIES, *RELATION_TYPES),
            headline_excludes=frozenset({ADVERSARIAL}),
            unified=True,
        ),
    )


def _host_path(path: Path) -> Path:
    # Upstream's data/ layout (locomo10.json or the zip beside the file), then a
    # datasets directory holding both (a locomo/ beside the file or beside its
    # directory), then the one beside its directory. Only LoCoMo's own file names
    # count in a directory that is not named locomo: a stray <n>.json there is no
    # host, and nothing is searched below.
    for directory in (path.parent, path.parent / "locomo", path.parent.parent / "locomo"):
        found = _host_in(directory, files_only=directory.name != "locomo")
        if found is not None:
            return found
    found = _host_in(path.parent.parent, files_only=True)
    if found is not None:
        return found
    try:
        return resolve_dataset("locomo", download=False).path
    except DatasetNotFoundError as exc:
        raise DatasetNotFoundError(
            f"LoCoMo-Plus is stitched into LoCoMo-10, found neither beside {path} "
            f"(locomo10.json / locomo10.zip, or a 'locomo' directory) nor as himga's "
            f"'locomo' dataset: {exc}"
        ) from exc


def _host_in(directory: Path, *, files_only: bool) -> Path | None:
    if files_only:
        return next((directory / n for n in HOST_FILES if (directory / n).is_file()), None)
    return find_locomo(directory) if directory.is_dir() else None


def _with_upstream_gold(host: Sample) -> Sample:
    """``host`` with each question's upstream category and judge evidence in ``gold``."""
    texts = {
        m.turn_id: (m.role, _raw_text(host, m.turn_id, m.content)) for _, m in host.iter_turns()
    }
    questions = []
    for qa in host.qa_pairs:
        lines = [
            f"{texts[t][0]}\uff1a{texts[t][1]}" if t in texts else f"[{t}] [Missing turn]"
            for t in qa.evidence
        ]
        gold = {"upstream_category": _UPSTREAM_NAMES[qa.category], "evidence": "\n".join(lines)}
        questions.append(dataclasses.replace(qa, gold=gold))
    return dataclasses.replace(host, qa_pairs=questions)


def _raw_text(host: Sample, turn_id: str | None, content: str) -> str:
    # Upstream's judge evidence is the turn's text alone, without the image caption
    # himga's loader appends to the content.
    extras = host.metadata.get("turn_extras", {}).get(turn_id, {})
    if "blip_caption" not in extras:
        return content
    suffix = IMAGE_FORMAT.format(text="", caption=extras["blip_caption"])
    return content.removesuffix(suffix)

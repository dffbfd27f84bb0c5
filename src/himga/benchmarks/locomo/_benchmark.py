"""LoCoMo-10 as a benchmark: the official file, its loader, mem0's judge, the official F1."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from himga.benchmarks.locomo._categories import ADVERSARIAL, CATEGORIES
from himga.benchmarks.locomo._judge import LocomoJudge
from himga.benchmarks.locomo._loader import find_locomo, iter_locomo
from himga.benchmarks.locomo._metrics import F1
from himga.data._registry import DatasetSpec

if TYPE_CHECKING:
    from himga.data.schema import Sample
    from himga.scoring._metric import Metric, RunMetric

__all__ = ["LOCOMO", "SPEC", "LoCoMo"]

_COMMIT = "e76cdff4a04fce19090596d49862fe87a5c15aaa"

SPEC = DatasetSpec(
    name="locomo",
    description="LoCoMo-10: 10 long two-person conversations, 1,986 questions",
    files=("locomo10.json", "locomo10.zip"),
    url=f"https://raw.githubusercontent.com/snap-research/locomo/{_COMMIT}/data/locomo10.zip",
    download_name="locomo10.zip",
    sha256="5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5",
    license="CC BY-NC 4.0",
    directories=("locomo",),
)
"""The official release: the repository's ``locomo10.zip`` at a pinned commit."""


class LoCoMo:
    """LoCoMo-10 (Maharana et al., ACL 2024). The headline leaves the adversarial
    category out (the 1,540 questions mem0 reports)."""

    name = SPEC.name
    description = SPEC.description
    license = SPEC.license
    categories: Sequence[str] = CATEGORIES
    headline_excludes: frozenset[str] = frozenset({ADVERSARIAL})
    judge = LocomoJudge()
    metrics: Sequence[Metric | RunMetric] = (F1,)

    def locate(self, directory: Path) -> Path | None:
        """``locomo10.json``, else ``locomo10.zip``, else per-conversation ``<n>.json``
        files, in ``directory/locomo/`` and then in ``directory`` itself."""
        for place in (directory / "locomo", directory):
            found = find_locomo(place) if place.is_dir() else None
            if found is not None:
                return found
        return None

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """``locomo10.zip`` (``$HIMGA_LOCOMO_URL`` overrides its URL), sha256-checked."""
        return SPEC.download(cache, show_progress=show_progress)

    def guidance(self, cache: Path) -> str:
        """Where the official zip is and where to save it."""
        return SPEC.guidance(cache)

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        """Any of the three layouts (see :mod:`._loader`)."""
        return iter_locomo(path, self.name, wanted)


LOCOMO = LoCoMo()
"""The registered instance (entry point ``locomo``)."""

"""The LongMemEval splits as benchmarks: one file each, one record per question."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from himga.benchmarks.longmemeval._categories import CATEGORIES
from himga.benchmarks.longmemeval._judge import LongMemEvalJudge
from himga.benchmarks.longmemeval._loader import iter_longmemeval
from himga.benchmarks.longmemeval._retrieval import longmemeval_retrieval_metrics
from himga.data._registry import DatasetSpec
from himga.scoring._metric import RunMetric

if TYPE_CHECKING:
    from himga.data.schema import Sample
    from himga.scoring._metric import Metric

__all__ = ["RETRIEVAL", "SPLITS", "LongMemEval", "splits"]

_LONGMEMEVAL = "https://huggingface.co/datasets/xiaowu0162/longmemeval/resolve/main"
_LONGMEMEVAL_CLEANED = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main"
# Every split may also sit in one shared directory of this name.
_FAMILY_DIRECTORY = "longmemeval"

RETRIEVAL = RunMetric(
    name="longmemeval_retrieval",
    description="the official retrieval metrics (turn and session level), searchable "
    "memories only; see himga.benchmarks.longmemeval.longmemeval_retrieval_metrics",
    compute=longmemeval_retrieval_metrics,
)


def _spec(
    variant: str, description: str, base: str, remote: str, sha256: str | None = None
) -> DatasetSpec:
    name = f"longmemeval_{variant}"
    return DatasetSpec(
        name=name,
        description=description,
        files=(f"{name}.json", name),
        url=f"{base}/{remote}",
        download_name=f"{name}.json",
        sha256=sha256,
        license="MIT",
        directories=(name, _FAMILY_DIRECTORY),
    )


SPLITS: tuple[DatasetSpec, ...] = (
    _spec(
        "s",
        "LongMemEval_S: 500 questions, ~50 haystack sessions each (~115k tokens)",
        _LONGMEMEVAL,
        "longmemeval_s",
    ),
    _spec(
        "m",
        "LongMemEval_M: 500 questions, ~500 haystack sessions each (2.7 GB)",
        _LONGMEMEVAL,
        "longmemeval_m",
    ),
    # Pinned to the file of ../shared/datasets, byte-identical to the cleaned
    # release's longmemeval_oracle.json (15,388,478 bytes); the other
    # LongMemEval files could not be fetched here to be hashed.
    _spec(
        "oracle",
        "LongMemEval oracle: 500 questions with only their evidence sessions",
        _LONGMEMEVAL_CLEANED,
        "longmemeval_oracle.json",
        "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c",
    ),
    _spec(
        "s_cleaned",
        "LongMemEval_S, cleaned release (2025)",
        _LONGMEMEVAL_CLEANED,
        "longmemeval_s_cleaned.json",
    ),
    _spec(
        "m_cleaned",
        "LongMemEval_M, cleaned release (2025)",
        _LONGMEMEVAL_CLEANED,
        "longmemeval_m_cleaned.json",
    ),
)
"""The official files, one per split."""


@dataclass(frozen=True)
class LongMemEval:
    """One LongMemEval split (``spec``): its file, the loader, the official judge and
    retrieval metrics. Every category counts in the headline (abstention questions
    keep their type, as in the official overall)."""

    spec: DatasetSpec
    categories: Sequence[str] = CATEGORIES
    headline_excludes: frozenset[str] = frozenset()
    judge: LongMemEvalJudge = field(default_factory=LongMemEvalJudge)
    metrics: Sequence[Metric | RunMetric] = (RETRIEVAL,)

    name: str = field(init=False)
    description: str = field(init=False)
    license: str = field(init=False)

    def __post_init__(self) -> None:
        # The split's name, description and license are its spec's.
        for attribute in ("name", "description", "license"):
            object.__setattr__(self, attribute, getattr(self.spec, attribute))

    def locate(self, directory: Path) -> Path | None:
        """``<name>.json`` (or ``<name>``) in ``directory/<name>/``, ``directory/longmemeval/``
        or ``directory``."""
        return self.spec.locate(directory)

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """The official file (``$HIMGA_LONGMEMEVAL_<SPLIT>_URL`` overrides its URL)."""
        return self.spec.download(cache, show_progress=show_progress)

    def guidance(self, cache: Path) -> str:
        """Where the official file is and where to save it."""
        return self.spec.guidance(cache)

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        """Streamed with bounded memory, whatever the file's size."""
        return iter_longmemeval(path, self.name, wanted)


def splits() -> tuple[LongMemEval, ...]:
    """Every split; the value of the ``longmemeval`` entry point."""
    return tuple(LongMemEval(spec) for spec in SPLITS)

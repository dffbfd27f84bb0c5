"""Benchmark data: the schema, where datasets are looked for, the helpers a benchmark's
loader uses, their errors.

Resolving and loading a registered benchmark's dataset is :mod:`himga.benchmarks`'
(:func:`~himga.benchmarks.load_dataset`, :func:`~himga.benchmarks.iter_dataset`,
:func:`~himga.benchmarks.resolve_dataset`): the registry is there, above this package.
``himga.data.load_dataset`` and the other two still work, looked up when first used,
and warn once (:class:`DeprecationWarning`) that they moved.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from himga.data._distractors import with_distractors
from himga.data._errors import (
    ChecksumMismatchError,
    DatasetError,
    DatasetNotFoundError,
    DatasetWarning,
    DownloadError,
    DuplicateSessionWarning,
    EvidenceWarning,
    MissingEvidenceWarning,
    MissingIdWarning,
    UnknownCategoryWarning,
    UnknownDatasetError,
    UnverifiedDownloadWarning,
)
from himga.data._registry import DatasetSpec
from himga.data._resolve import Resolution, cache_dir
from himga.data._stats import DatasetStats, dataset_stats
from himga.data._subset import QuestionFileError, QuestionSubset
from himga.data.schema import Category, Message, QAPair, Sample, Session

if TYPE_CHECKING:  # for type checkers only: at run time, __getattr__ below
    from himga.benchmarks import iter_dataset as iter_dataset
    from himga.benchmarks import load_dataset as load_dataset
    from himga.benchmarks import resolve_dataset as resolve_dataset

__all__ = [
    "Category",
    "ChecksumMismatchError",
    "DatasetError",
    "DatasetNotFoundError",
    "DatasetSpec",
    "DatasetStats",
    "DatasetWarning",
    "DownloadError",
    "DuplicateSessionWarning",
    "EvidenceWarning",
    "Message",
    "MissingEvidenceWarning",
    "MissingIdWarning",
    "QAPair",
    "QuestionFileError",
    "QuestionSubset",
    "Resolution",
    "Sample",
    "Session",
    "UnknownCategoryWarning",
    "UnknownDatasetError",
    "UnverifiedDownloadWarning",
    "cache_dir",
    "dataset_stats",
    "with_distractors",
]

#: Names that moved to :mod:`himga.benchmarks`, kept here for one release.
_MOVED = frozenset({"iter_dataset", "load_dataset", "resolve_dataset"})


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import himga.benchmarks

    warnings.warn(
        f"himga.data.{name} moved to himga.benchmarks: from himga.benchmarks import {name}",
        DeprecationWarning,
        stacklevel=2,
    )
    moved = getattr(himga.benchmarks, name)
    globals()[name] = moved  # warned once: the next lookup finds it here
    return moved

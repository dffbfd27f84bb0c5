"""Benchmark data: the schema, where datasets are looked for, the helpers a benchmark's
loader uses, their errors.

Resolving and loading a registered benchmark's dataset is :mod:`himga.benchmarks`'
(:func:`~himga.benchmarks.load_dataset`, :func:`~himga.benchmarks.iter_dataset`,
:func:`~himga.benchmarks.resolve_dataset`): the registry is there, above this package.
``himga.data.load_dataset`` and the other two still work, looked up when first used,
and warn once (:class:`DeprecationWarning`) that they moved.
"""

from __future__ import annotations

from himga._lazy import moved_names
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
__getattr__ = moved_names(
    __name__,
    dict.fromkeys(("iter_dataset", "load_dataset", "resolve_dataset"), "himga.benchmarks"),
    globals(),
)

"""Benchmark data: the schema, resolution and loading of any registered benchmark
(:mod:`himga.benchmarks`), the helpers a benchmark's loader uses, their errors."""

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
from himga.data._load import iter_dataset, load_dataset
from himga.data._registry import DatasetSpec
from himga.data._resolve import Resolution, cache_dir, resolve_dataset
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
    "iter_dataset",
    "load_dataset",
    "resolve_dataset",
    "with_distractors",
]

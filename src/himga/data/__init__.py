"""Benchmark data: the schema, the LoCoMo and LongMemEval loaders, their errors."""

from himga.data._distractors import with_distractors
from himga.data._errors import (
    ChecksumMismatchError,
    DatasetError,
    DatasetNotFoundError,
    DatasetWarning,
    DownloadError,
    DuplicateSessionWarning,
    EvidenceWarning,
    UnknownCategoryWarning,
    UnknownDatasetError,
    UnverifiedDownloadWarning,
)
from himga.data._load import iter_dataset, load_dataset
from himga.data._registry import DATASETS, DatasetSpec
from himga.data._resolve import Resolution, cache_dir, resolve_dataset
from himga.data._stats import DatasetStats, dataset_stats
from himga.data.schema import Category, Message, QAPair, Sample, Session

__all__ = [
    "DATASETS",
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
    "QAPair",
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

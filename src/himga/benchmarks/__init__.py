"""Benchmarks: the :class:`Benchmark` protocol, the registry of the known ones, and
resolving and loading their datasets (:func:`load_dataset`, :func:`iter_dataset`,
:func:`resolve_dataset`).

A benchmark owns everything benchmark-specific -- where its files come from, its
loader, its categories and report order, its judge, its own metrics -- in one
sub-package (:mod:`himga.benchmarks.locomo`, :mod:`himga.benchmarks.longmemeval`)
and one registration under the entry-point group ``himga.benchmarks``. See
``docs/benchmarks.md``.
"""

from himga.benchmarks._load import iter_dataset, load_dataset
from himga.benchmarks._protocol import Benchmark, JSONValue, Judge, JudgeRequest, UnjudgeableError
from himga.benchmarks._registry import (
    ENTRY_POINT_GROUP,
    BenchmarkLoadError,
    BenchmarkPluginWarning,
    UnknownDatasetError,
    benchmark_from_spec,
    benchmarks,
    dataset_name,
    find_benchmark,
    get_benchmark,
    register_benchmark,
)
from himga.benchmarks._resolve import resolve_dataset

__all__ = [
    "ENTRY_POINT_GROUP",
    "Benchmark",
    "BenchmarkLoadError",
    "BenchmarkPluginWarning",
    "JSONValue",
    "Judge",
    "JudgeRequest",
    "UnjudgeableError",
    "UnknownDatasetError",
    "benchmark_from_spec",
    "benchmarks",
    "dataset_name",
    "find_benchmark",
    "get_benchmark",
    "iter_dataset",
    "load_dataset",
    "register_benchmark",
    "resolve_dataset",
]

"""Benchmarks: the :class:`Benchmark` protocol and the registry of the known ones.

A benchmark owns everything benchmark-specific -- where its files come from, its
loader, its categories and report order, its judge, its own metrics -- in one
sub-package (:mod:`himga.benchmarks.locomo`, :mod:`himga.benchmarks.longmemeval`)
and one registration under the entry-point group ``himga.benchmarks``. See
``docs/benchmarks.md``.
"""

from himga.benchmarks._protocol import Benchmark, JSONValue, Judge, JudgeRequest, UnjudgeableError
from himga.benchmarks._registry import (
    ENTRY_POINT_GROUP,
    BenchmarkLoadError,
    BenchmarkPluginWarning,
    UnknownDatasetError,
    benchmarks,
    find_benchmark,
    get_benchmark,
    register_benchmark,
)

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
    "benchmarks",
    "find_benchmark",
    "get_benchmark",
    "register_benchmark",
]

"""Moved: the generated LongMemEval files are :mod:`himga.benchmarks.longmemeval.synthetic`.

This module path, which earlier releases documented, still gives the same functions
(and warns once that it moved). They are looked up only when asked for, so
:mod:`himga.data` never imports :mod:`himga.benchmarks`, the layer above it.
"""

from __future__ import annotations

import warnings

from himga._lazy import lazy_names

__all__ = ["longmemeval_record", "write_longmemeval"]  # noqa: F822  (served by __getattr__)

warnings.warn(
    "himga.data.synthetic moved to himga.benchmarks.longmemeval.synthetic: "
    "from himga.benchmarks.longmemeval.synthetic import write_longmemeval",
    DeprecationWarning,
    stacklevel=2,
)


# The module itself warned above; its names are then looked up where they live now.
__getattr__, __dir__ = lazy_names(
    "himga", dict.fromkeys(__all__, "benchmarks.longmemeval.synthetic"), globals()
)

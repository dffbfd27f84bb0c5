"""Moved: the generated LongMemEval files are :mod:`himga.benchmarks.longmemeval.synthetic`.

This module path, which earlier releases documented, still gives the same functions
(and warns once that it moved). They are looked up only when asked for, so
:mod:`himga.data` never imports :mod:`himga.benchmarks`, the layer above it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers only: at run time, __getattr__ below
    from himga.benchmarks.longmemeval.synthetic import longmemeval_record, write_longmemeval

__all__ = ["longmemeval_record", "write_longmemeval"]

warnings.warn(
    "himga.data.synthetic moved to himga.benchmarks.longmemeval.synthetic: "
    "from himga.benchmarks.longmemeval.synthetic import write_longmemeval",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    if name in __all__:
        from himga.benchmarks.longmemeval import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

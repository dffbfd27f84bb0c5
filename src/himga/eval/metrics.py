"""Moved: the answer scorers that need no LLM are :mod:`himga.scoring.metrics`.

This module path, which earlier releases documented, still imports the same
functions (and warns once that it moved); ``locomo_f1``, which it held before LoCoMo
became a benchmark package, is :func:`himga.benchmarks.locomo.locomo_f1`, looked up
there with its own warning.
"""

from __future__ import annotations

import warnings

from himga._lazy import moved_names
from himga.scoring.metrics import bleu1, exact_match, normalize_answer, token_f1

__all__ = ["bleu1", "exact_match", "normalize_answer", "token_f1"]

warnings.warn(
    "himga.eval.metrics moved to himga.scoring.metrics: from himga.scoring.metrics import token_f1",
    DeprecationWarning,
    stacklevel=2,
)

__getattr__ = moved_names(__name__, {"locomo_f1": "himga.benchmarks.locomo"}, globals())

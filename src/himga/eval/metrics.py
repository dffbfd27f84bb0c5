"""Moved: the answer scorers that need no LLM are :mod:`himga.scoring.metrics`.

This module path, which earlier releases documented, still imports the same
functions (and warns once that it moved).
"""

from __future__ import annotations

import warnings

from himga.scoring.metrics import bleu1, exact_match, normalize_answer, token_f1

__all__ = ["bleu1", "exact_match", "normalize_answer", "token_f1"]

warnings.warn(
    "himga.eval.metrics moved to himga.scoring.metrics: from himga.scoring.metrics import token_f1",
    DeprecationWarning,
    stacklevel=2,
)

"""LongMemEval (Wu et al., ICLR 2025) as himga benchmarks, one per split.

Its file layout and loader (:func:`iter_longmemeval`), question types
(:mod:`._categories`), the official judge prompts (:class:`LongMemEvalJudge`) and
retrieval metrics (:func:`longmemeval_retrieval_metrics`, contributed to every
run of a split as the run metric ``longmemeval_retrieval``).
"""

from himga.benchmarks.longmemeval._benchmark import RETRIEVAL, SPLITS, LongMemEval, splits
from himga.benchmarks.longmemeval._categories import CATEGORIES
from himga.benchmarks.longmemeval._judge import PROMPTS, LongMemEvalJudge, parse_yes_no
from himga.benchmarks.longmemeval._loader import ABSTENTION_SUFFIX, QUESTION_TYPES, iter_longmemeval
from himga.benchmarks.longmemeval._retrieval import (
    LONGMEMEVAL_KS,
    RetrievalScores,
    longmemeval_retrieval_metrics,
    session_retrieval,
    session_sizes,
    turn_retrieval,
)

__all__ = [
    "ABSTENTION_SUFFIX",
    "CATEGORIES",
    "LONGMEMEVAL_KS",
    "PROMPTS",
    "QUESTION_TYPES",
    "RETRIEVAL",
    "SPLITS",
    "LongMemEval",
    "LongMemEvalJudge",
    "RetrievalScores",
    "iter_longmemeval",
    "longmemeval_retrieval_metrics",
    "parse_yes_no",
    "session_retrieval",
    "session_sizes",
    "splits",
    "turn_retrieval",
]

"""What a run's questions are scored on and with: the record of one question
(:class:`EvalResult`), what a metric is (:class:`Metric`, :class:`RunMetric`) and the
answer scorers that need no LLM (:mod:`himga.scoring.metrics`: token F1, BLEU-1, exact
match).

A small layer below both :mod:`himga.benchmarks` (whose metrics and judges are written
against these types) and :mod:`himga.eval` (which runs and aggregates them); it imports
nothing of himga but :mod:`himga.data`'s schema and the optional-extra helper.
:mod:`himga.eval` re-exports the types, so ``from himga.eval import EvalResult`` works
as before.
"""

from himga.scoring._metric import Metric, MetricNeed, RunMetric
from himga.scoring._result import SEARCH_K, EvalResult, MemoryCallError
from himga.scoring.metrics import bleu1, exact_match, normalize_answer, token_f1

__all__ = [
    "SEARCH_K",
    "EvalResult",
    "MemoryCallError",
    "Metric",
    "MetricNeed",
    "RunMetric",
    "bleu1",
    "exact_match",
    "normalize_answer",
    "token_f1",
]

"""Answer-overlap metrics for LoCoMo-Plus: none for its items, LoCoMo's for LoCoMo's questions.

A LoCoMo-Plus item has no gold answer (``answer`` is ``""``): token F1, BLEU-1 and
exact match against it would score every reply 0, so they are left out for it
(``None``, not applicable); its answer is scored by the judge only, as upstream
does. LoCoMo's own questions in ``locomo-plus-unified`` keep LoCoMo's metrics: its
official F1 (:data:`himga.benchmarks.locomo.F1`) and the built-in BLEU-1 and exact
match.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from himga.benchmarks.locomo import F1
from himga.benchmarks.locomo_plus._stitch import COGNITIVE
from himga.scoring._metric import Metric
from himga.scoring.metrics import bleu1, exact_match

if TYPE_CHECKING:
    from himga.scoring._result import EvalResult

__all__ = ["METRICS"]


def _is_item(result: EvalResult) -> bool:
    return result.gold.get("upstream_category") == COGNITIVE


def _has_answer(result: EvalResult) -> bool:
    return not (_is_item(result) or result.adversarial)


def _f1(result: EvalResult, judge: float | None) -> float | None:
    # LoCoMo's official F1 scores its adversarial questions too (by abstention words).
    return None if _is_item(result) else F1.score(result, judge)


def _bleu1(result: EvalResult, judge: float | None) -> float | None:
    return bleu1(result.prediction or "", result.answer) if _has_answer(result) else None


def _exact_match(result: EvalResult, judge: float | None) -> float | None:
    return exact_match(result.prediction or "", result.answer) if _has_answer(result) else None


METRICS = (
    dataclasses.replace(F1, score=_f1, description=f"{F1.description}; none for LoCoMo-Plus items"),
    Metric("bleu1", "BLEU-1", "prediction", _bleu1, in_table=True,
           description="BLEU-1 with the gold answer (not for unanswerable questions or "
           "LoCoMo-Plus items)"),
    Metric("exact_match", "EM", "prediction", _exact_match,
           description="same normalised words as the gold answer (not for unanswerable "
           "questions or LoCoMo-Plus items)"),
)  # fmt: skip
"""The ``f1``, ``bleu1`` and ``exact_match`` of both LoCoMo-Plus registrations."""

"""LoCoMo's official QA score, ``locomo_f1``, and the ``f1`` metric it defines for LoCoMo.

The per-category dispatch of ``eval_question_answering`` in the official scorer,
``task_eval/evaluation.py`` of snap-research/locomo, on top of its ``f1_score``
(:func:`himga.scoring.metrics.token_f1`):

* category 1 (multi-hop) splits prediction and gold on commas and averages, over
  the gold parts, the best F1 of any prediction part;
* category 3 (open-domain) keeps the gold up to its first ``;``;
* category 5 (adversarial) scores 1 when the lowercased prediction contains
  ``"no information available"`` or ``"not mentioned"``, else 0;
* categories 2 and 4 use plain F1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from himga.benchmarks.locomo._categories import category_of_code, code_of
from himga.scoring._metric import Metric
from himga.scoring.metrics import token_f1

if TYPE_CHECKING:
    from himga.scoring._result import EvalResult

__all__ = ["F1", "locomo_f1"]

_ABSTENTION_MARKERS = ("no information available", "not mentioned")


def _code(category: str | int) -> int:
    if isinstance(category, str):
        code = code_of(category)
        if code is None:
            raise ValueError(f"locomo_f1 scores LoCoMo categories only, got {category!r}")
        return code
    category_of_code(category)  # raises ValueError naming the unknown code
    return category


def locomo_f1(prediction: str, ground_truth: str, category: str | int) -> float:
    """The official LoCoMo QA score of ``prediction`` against ``ground_truth``.

    ``category`` is a LoCoMo category (``"multi-hop"``, ...) or its official integer
    code (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial); any
    other value is a ``ValueError``.
    """
    code = _code(category)
    if code == 5:
        lowered = prediction.lower()
        return 1.0 if any(marker in lowered for marker in _ABSTENTION_MARKERS) else 0.0
    if code == 3:
        ground_truth = ground_truth.split(";")[0].strip()
    if code == 1:
        predictions = [part.strip() for part in prediction.split(",")]
        golds = [part.strip() for part in ground_truth.split(",")]
        best = [max(token_f1(p, gold) for p in predictions) for gold in golds]
        return sum(best) / len(best)
    return token_f1(prediction, ground_truth)


_F1_DESCRIPTION = "the official LoCoMo QA score (locomo_f1), adversarial questions included"


def _f1(result: EvalResult, judge: float | None) -> float | None:
    assert result.prediction is not None
    return locomo_f1(result.prediction, result.answer, result.category)


F1 = Metric("f1", "F1", "prediction", _f1, in_table=True, description=_F1_DESCRIPTION)
"""LoCoMo's ``f1``: it replaces the built-in token F1 for LoCoMo results."""

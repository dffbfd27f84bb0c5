"""LongMemEval's ``strict`` judge prompt: the official yes / no judge without its leniency.

Written here (issue 32): the official prompts accept a response that "contains" the
answer (so padding and hedging pass) and, for temporal reasoning, off-by-one day
counts. This one answers yes only for the answer stated exactly and specifically:
no vague or hedged response, no several candidates, no irrelevant or unsupported
detail, exact dates and numbers. Abstention (``_abs``) questions keep the official
abstention prompt, single-session-preference questions (a rubric, not an answer)
the official preference prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from himga.benchmarks._judge_prompts import JudgePrompt
from himga.benchmarks.longmemeval._benchmark import SPLITS
from himga.benchmarks.longmemeval._categories import SINGLE_SESSION_PREFERENCE
from himga.benchmarks.longmemeval._judge import PROMPTS, LongMemEvalJudge

if TYPE_CHECKING:
    from himga.scoring._result import EvalResult

__all__ = ["STRICT", "STRICT_PROMPT", "StrictLongMemEvalJudge"]

STRICT_PROMPT = (
    "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes only if the response states the correct answer exactly and specifically. Otherwise, "
    "answer no. Answer no if the response is vague or hedged, gives several candidate answers, "
    "contains only a subset of the information required by the answer, or adds details that "
    "are irrelevant to the question or not supported by the correct answer. Dates must be "
    "exact (the same day, month or year as the correct answer), and so must numbers, counts "
    "and durations: an off-by-one count is wrong."
    "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct? Answer yes or no only."
)
_STRICT = "longmemeval-strict"
_ABSTENTION = "longmemeval-abstention"
_PREFERENCE = "longmemeval-single-session-preference"


class StrictLongMemEvalJudge(LongMemEvalJudge):
    """:data:`STRICT_PROMPT` for every answerable question but preference ones."""

    prompts: Mapping[str, str] = {
        _STRICT: STRICT_PROMPT,
        _ABSTENTION: PROMPTS[_ABSTENTION],
        _PREFERENCE: PROMPTS[_PREFERENCE],
    }

    def _prompt_name(self, result: EvalResult) -> str:
        if result.adversarial:
            return _ABSTENTION
        if result.category == SINGLE_SESSION_PREFERENCE:
            return _PREFERENCE
        return _STRICT


STRICT = JudgePrompt(
    "strict",
    tuple(spec.name for spec in SPLITS),
    StrictLongMemEvalJudge(),
    "no credit for vague or padded answers; exact dates and numbers (no off-by-one)",
)

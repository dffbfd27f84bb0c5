"""LongMemEval's judge: the official type-specific yes / no prompts.

The prompts are those of ``get_anscheck_prompt`` in ``src/evaluation/evaluate_qa.py``
of xiaowu0162/LongMemEval, verbatim: default, temporal-reasoning (off-by-one
tolerant), knowledge-update, single-session-preference (rubric) and abstention
(``_abs`` questions). The official script takes any reply containing "yes" as yes;
here a reply naming both or neither is unjudgeable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from himga.benchmarks._offline import abstains, covered, format_fields
from himga.benchmarks._protocol import JSONValue, JudgeRequest, UnjudgeableError
from himga.benchmarks.longmemeval._categories import (
    KNOWLEDGE_UPDATE,
    SINGLE_SESSION_PREFERENCE,
    TEMPORAL_REASONING,
)

if TYPE_CHECKING:
    from himga.scoring._result import EvalResult

__all__ = [
    "ABSTENTION_PROMPT",
    "PROMPTS",
    "YES_NO_MAX_TOKENS",
    "LongMemEvalJudge",
    "offline_yes_no",
    "parse_yes_no",
]

_LME_HEAD = (
    "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes if the response contains the correct answer. Otherwise, answer no. "
)
_LME_STEPS = (
    "If the response is equivalent to the correct answer or contains all the intermediate "
    "steps to get the correct answer, you should also answer yes. If the response only "
    "contains a subset of the information required by the answer, answer no. "
)
_LME_TAIL = (
    "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct? Answer yes or no only."
)
_LME_DEFAULT = _LME_HEAD + _LME_STEPS + _LME_TAIL
_LME_TEMPORAL = (
    _LME_HEAD
    + _LME_STEPS
    + "In addition, do not penalize off-by-one errors for the number of days. If the question "
    "asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
    "(e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    + _LME_TAIL
)
_LME_KNOWLEDGE_UPDATE = (
    _LME_HEAD
    + "If the response contains some previous information along with an updated answer, the "
    "response should be considered as correct as long as the updated answer is the required "
    "answer." + _LME_TAIL
)
_LME_PREFERENCE = (
    "I will give you a question, a rubric for desired personalized response, and a response "
    "from a model. Please answer yes if the response satisfies the desired response. "
    "Otherwise, answer no. The model does not need to reflect all the points in the rubric. "
    "The response is correct as long as it recalls and utilizes the user's personal "
    "information correctly.\n\nQuestion: {question}\n\nRubric: {answer}\n\nModel Response: "
    "{response}\n\nIs the model response correct? Answer yes or no only."
)
_LME_ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. "
    "Please answer yes if the model correctly identifies the question as unanswerable. The "
    "model could say that the information is incomplete, or some other information is given "
    "but the asked information is not.\n\nQuestion: {question}\n\nExplanation: {answer}\n\n"
    "Model Response: {response}\n\nDoes the model correctly identify the question as "
    "unanswerable? Answer yes or no only."
)
ABSTENTION_PROMPT = _LME_ABSTENTION
"""The abstention template (fields ``question``, ``answer``, ``response``)."""

PROMPTS: Mapping[str, str] = {
    "longmemeval-default": _LME_DEFAULT,
    "longmemeval-temporal-reasoning": _LME_TEMPORAL,
    "longmemeval-knowledge-update": _LME_KNOWLEDGE_UPDATE,
    "longmemeval-single-session-preference": _LME_PREFERENCE,
    "longmemeval-abstention": _LME_ABSTENTION,
}

#: The official call allows 10 tokens for "yes" / "no".
YES_NO_MAX_TOKENS = 10

_TYPED = {
    TEMPORAL_REASONING: "longmemeval-temporal-reasoning",
    KNOWLEDGE_UPDATE: "longmemeval-knowledge-update",
    SINGLE_SESSION_PREFERENCE: "longmemeval-single-session-preference",
}
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def single_verdict(found: set[str], positive: str, reply: str) -> float:
    """1.0 when the verdict words ``found`` in ``reply`` are just ``positive``, 0.0 when
    they are just the other one; :class:`UnjudgeableError` for both or neither."""
    if len(found) != 1:
        raise UnjudgeableError(f"no single verdict in judge reply {reply[:200]!r}")
    return 1.0 if found == {positive} else 0.0


def only_verdict(parsed: Sequence[JSONValue]) -> float:
    """The score of a question judged by one call parsed to 1.0 / 0.0."""
    (verdict,) = parsed
    assert isinstance(verdict, (int, float))
    return float(verdict)


def parse_yes_no(reply: str) -> float:
    """1.0 / 0.0 for the single yes / no word of ``reply``; :class:`UnjudgeableError` if
    it has both or neither."""
    return single_verdict({match.lower() for match in _YES_NO.findall(reply)}, "yes", reply)


def offline_yes_no(template: str, text: str) -> str | None:
    """The offline reply to ``text`` if it is ``template`` (one of :data:`PROMPTS`)
    filled in: "yes" when the response abstains (abstention template) or holds
    every word of the correct answer (or rubric), else "no"; ``None`` otherwise."""
    fields = format_fields(template, text)
    if fields is None:
        return None
    if template == ABSTENTION_PROMPT:
        correct = abstains(fields["response"])
    else:
        correct = covered(fields["answer"], fields["response"]) == 1.0
    return "yes" if correct else "no"


class LongMemEvalJudge:
    """The official prompt of the question's type (abstention for ``_abs`` questions).

    A subclass judges with other yes / no prompts filled with the same fields
    (``question``, ``answer``, ``response``) by replacing :attr:`prompts` and
    :meth:`_prompt_name` (the ``strict`` judge prompt)."""

    prompts: Mapping[str, str] = PROMPTS

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        """One yes / no call."""
        name = self._prompt_name(result)
        text = self.prompts[name].format(
            question=result.question, answer=result.answer, response=result.prediction
        )
        return [JudgeRequest(name, text, YES_NO_MAX_TOKENS)]

    def _prompt_name(self, result: EvalResult) -> str:
        """The name in :attr:`prompts` of the prompt that judges ``result``."""
        if result.adversarial:
            return "longmemeval-abstention"
        return _TYPED.get(result.category, "longmemeval-default")

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        """The yes / no verdict as 1.0 / 0.0."""
        return parse_yes_no(reply)

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        """The verdict of the one call."""
        return only_verdict(parsed)

    def offline_reply(self, text: str) -> str | None:
        """yes / no, decided by :func:`offline_yes_no` for the template ``text`` fills."""
        return next(
            (r for t in self.prompts.values() if (r := offline_yes_no(t, text)) is not None),
            None,
        )

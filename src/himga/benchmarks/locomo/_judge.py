"""LoCoMo's judge: the binary CORRECT / WRONG judge of mem0's evaluation.

The prompt is ``ACCURACY_PROMPT`` of mem0's ``evaluation/metrics/llm_judge.py``,
verbatim. mem0 skips the adversarial category; here adversarial (unanswerable)
questions are judged with LongMemEval's abstention prompt, so the
with-adversarial aggregate has a judge score too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from himga.benchmarks._offline import covered, format_fields
from himga.benchmarks._protocol import JSONValue, JudgeRequest
from himga.benchmarks.locomo._categories import ADVERSARIAL
from himga.benchmarks.longmemeval._judge import (
    ABSTENTION_PROMPT,
    YES_NO_MAX_TOKENS,
    offline_yes_no,
    only_verdict,
    parse_yes_no,
    single_verdict,
)

if TYPE_CHECKING:
    from himga.scoring._result import EvalResult

__all__ = ["PROMPTS", "LocomoJudge", "parse_label"]

_LOCOMO = """
Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:
    (1) a question (posed by one user to another user), 
    (2) a ’gold’ (ground truth) answer, 
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. 

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. 
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""  # noqa: E501, W291  (verbatim: long lines and trailing spaces included)

# LoCoMo's adversarial gold is a distractor, not an explanation: the abstention
# prompt gets this fixed explanation instead.
_ADVERSARIAL_EXPLANATION = "The conversations do not contain this information."
_ABSTENTION = "longmemeval-abstention"

PROMPTS: Mapping[str, str] = {"locomo": _LOCOMO, _ABSTENTION: ABSTENTION_PROMPT}

# mem0 lets the judge explain in one sentence.
_MAX_TOKENS = 256
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def parse_label(reply: str) -> float:
    """1.0 / 0.0 for the verdict of a reply to mem0's prompt: the ``"label"`` of a JSON
    object if there is one, else the single upper-case CORRECT / WRONG in the text;
    :class:`UnjudgeableError` when there is none."""
    for match in _JSON_OBJECT.finditer(reply):
        try:
            label = json.loads(match.group())
        except json.JSONDecodeError:
            continue
        if isinstance(label, dict) and isinstance(label.get("label"), str):
            verdict = label["label"].strip().upper()
            if verdict in ("CORRECT", "WRONG"):
                return 1.0 if verdict == "CORRECT" else 0.0
    return single_verdict({match.upper() for match in _LABEL.findall(reply)}, "CORRECT", reply)


class LocomoJudge:
    """mem0's prompt; the abstention prompt for the adversarial category.

    ``name`` and ``template`` replace mem0's prompt by another that is filled with the
    same fields (``question``, ``gold_answer``, ``generated_answer``) and asks for the
    same CORRECT / WRONG label (the ``strict`` judge prompt)."""

    def __init__(self, name: str = "locomo", template: str = _LOCOMO) -> None:
        self._name = name
        self._template = template
        self.prompts: Mapping[str, str] = {name: template, _ABSTENTION: ABSTENTION_PROMPT}

    def __repr__(self) -> str:
        return f"LocomoJudge({self._name!r})"

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        """One call."""
        if result.category == ADVERSARIAL:
            text = ABSTENTION_PROMPT.format(
                question=result.question,
                answer=_ADVERSARIAL_EXPLANATION,
                response=result.prediction,
            )
            return [JudgeRequest(_ABSTENTION, text, YES_NO_MAX_TOKENS)]
        text = self._template.format(
            question=result.question,
            gold_answer=result.answer,
            generated_answer=result.prediction,
        )
        return [JudgeRequest(self._name, text, _MAX_TOKENS)]

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        """The verdict as 1.0 / 0.0."""
        return parse_label(reply) if request.prompt == self._name else parse_yes_no(reply)

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        """The verdict of the one call."""
        return only_verdict(parsed)

    def offline_reply(self, text: str) -> str | None:
        """mem0's JSON label, CORRECT when the generated answer holds every word of the
        gold; the abstention prompt's yes / no (:func:`offline_yes_no`)."""
        fields = format_fields(self._template, text)
        if fields is None:
            return offline_yes_no(ABSTENTION_PROMPT, text)
        correct = covered(fields["gold_answer"], fields["generated_answer"]) == 1.0
        return json.dumps({"label": "CORRECT" if correct else "WRONG"})

"""BEAM's answer judge: rubric items judged 1 / 0.5 / 0, event ordering by Kendall tau.

As ``src/evaluation`` of mohammadtavakoli78/BEAM (commit ``b2a3ee8``) scores a
probing question, with two of its bugs fixed unless ``official=True``:

* the judge prompt's ``<question>`` slot is filled with the question (the
  official code never fills it: the judge reads the literal ``<question>``);
* a rubric item's 0.5 counts 0.5 (the official ``int(score)`` makes it 0, for
  every type but event ordering);
* event ordering aligns the answer's non-blank lines (the official code aligns
  every line of ``llm_response.split("\\n")``, blank ones included, and a blank
  line that matches nothing still takes a rank).

Event ordering's score is the normalised Kendall tau of the aligned order, the
value the official report averages (``tau_norm``); the rubric judge score the
official code also computes for it is not reported there, so it is not asked
here. The alignment asks, for every (rubric item, answer line) pair, whether
both describe the same event, then replays the official first-match loop on the
answers (the official loop stops asking early; the verdicts it uses are the
same).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from himga.benchmarks._offline import covered, slot_fields
from himga.benchmarks._protocol import JSONValue, JudgeRequest, UnjudgeableError
from himga.benchmarks.beam._load import EVENT_ORDERING
from himga.benchmarks.beam._prompts import EQUIVALENCE_PROMPT, RUBRIC_PROMPT
from himga.benchmarks.beam._scoring import align, event_ordering_tau, rubric_score
from himga.scoring._result import EvalResult

__all__ = ["BeamJudge", "parse_equivalence", "parse_rubric_verdict"]

_RUBRIC_MAX_TOKENS = 1024
_EQUIVALENCE_MAX_TOKENS = 16
_FENCED = re.compile(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", re.DOTALL)
_FIRST_OBJECT = re.compile(r"(\{.*?\}|\[.*?\])", re.DOTALL)
_SCORE_FIELD = re.compile(r'"score"\s*:\s*"?\s*([0-9]*\.?[0-9]+)')
_RUBRIC_SLOTS = ("question", "rubric_item", "llm_response")
_SLOT = re.compile(r"<(question|rubric_item|llm_response|first_snippet|second_snippet)>")


class BeamJudge:
    """The judge of every BEAM tier; ``official=True`` reproduces the official script.

    Reads ``result.category`` (the question type) and ``result.gold["rubric"]``
    (the rubric items; for event ordering, the events in their right order).
    """

    def __init__(
        self,
        *,
        official: bool = False,
        rubric_prompt: str = RUBRIC_PROMPT,
        variant: str = "",
        binary: bool = False,
    ) -> None:
        """``rubric_prompt`` (same slots and JSON reply as BEAM's) under the template name
        ``beam-rubric-<variant>`` replaces BEAM's own; ``binary``: a rubric verdict below
        1.0 counts 0 (no partial credit)."""
        self.official = official
        self._binary = binary
        suffix = "-official" if official else ""
        self._rubric = f"beam-rubric{suffix}" + (f"-{variant}" if variant else "")
        self._rubric_prompt = rubric_prompt
        self._equivalence = f"beam-event-equivalence{suffix}"
        # Both modes send the same templates; the names differ so that a run's
        # identity (which hashes names and texts) tells the two scorings apart.
        self.prompts: Mapping[str, str] = {
            self._rubric: rubric_prompt,
            self._equivalence: EQUIVALENCE_PROMPT,
        }

    def __repr__(self) -> str:
        return f"BeamJudge(official={self.official}, rubric={self._rubric!r})"

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        """One request per rubric item; for event ordering, one per (item, answer line)."""
        rubric = _rubric(result)
        prediction = _prediction(result)
        if result.category == EVENT_ORDERING:
            return [
                JudgeRequest(
                    self._equivalence,
                    _fill(EQUIVALENCE_PROMPT, first_snippet=item, second_snippet=line),
                    _EQUIVALENCE_MAX_TOKENS,
                )
                for line in self._lines(prediction)
                for item in rubric
            ]
        return [
            JudgeRequest(
                self._rubric,
                self._rubric_text(result.question, item, prediction),
                _RUBRIC_MAX_TOKENS,
            )
            for item in rubric
        ]

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        """A rubric verdict (a float in [0, 1]) or an equivalence verdict (a bool)."""
        if request.prompt == self._equivalence:
            return parse_equivalence(reply)
        return parse_rubric_verdict(reply)

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        """The mean rubric verdict, or event ordering's normalised Kendall tau."""
        rubric = _rubric(result)
        if result.category == EVENT_ORDERING:
            lines = self._lines(_prediction(result))
            if len(parsed) != len(lines) * len(rubric):
                raise ValueError(
                    f"{result.question_id}: {len(parsed)} verdicts for "
                    f"{len(lines)} lines x {len(rubric)} rubric items"
                )
            width = len(rubric)
            aligned = align(rubric, lines, lambda i, j: parsed[j * width + i] is True)
            return event_ordering_tau(rubric, aligned)
        verdicts = [float(v) for v in parsed if isinstance(v, (int, float))]
        if self._binary:
            verdicts = [1.0 if v >= 1.0 else 0.0 for v in verdicts]
        if len(verdicts) != len(rubric):
            raise ValueError(
                f"{result.question_id}: expected {len(rubric)} rubric verdicts, got {parsed!r}"
            )
        return rubric_score(verdicts, official=self.official)

    def offline_reply(self, text: str) -> str | None:
        """A rubric verdict ``{"score": s}``, ``s`` 1.0 when the response holds every
        word of the rubric item, 0.5 half or more, else 0.0; an equivalence "yes" when
        the answer line holds half the event's words or more, else "no"."""
        # The official mode leaves <question> unfilled: then it is literal text.
        slots = ("rubric_item", "llm_response") if self.official else _RUBRIC_SLOTS
        rubric = slot_fields(self._rubric_prompt, text, slots)
        if rubric is not None:
            share = covered(rubric["rubric_item"], rubric["llm_response"])
            partial = 0.0 if self._binary else 0.5
            score = 1.0 if share == 1.0 else partial if share >= 0.5 else 0.0
            return json.dumps({"score": score, "reason": "offline: word overlap"})
        pair = slot_fields(EQUIVALENCE_PROMPT, text, ("first_snippet", "second_snippet"))
        if pair is None:
            return None
        return "yes" if covered(pair["first_snippet"], pair["second_snippet"]) >= 0.5 else "no"

    def _lines(self, prediction: str) -> list[str]:
        lines = prediction.split("\n")
        return lines if self.official else [line for line in lines if line.strip()]

    def _rubric_text(self, question: str, item: str, prediction: str) -> str:
        if self.official:
            # The official chain of replaces, <question> left as it is.
            return self._rubric_prompt.replace("<rubric_item>", item).replace(
                "<llm_response>", prediction
            )
        return _fill(
            self._rubric_prompt, question=question, rubric_item=item, llm_response=prediction
        )


def parse_rubric_verdict(reply: str) -> float:
    """The ``score`` of a rubric judge's JSON reply, a number in [0, 1].

    As ``parse_json_response``: the whole reply (a fenced block's content if
    fenced), else its first ``{...}``; where neither is JSON, a ``"score": x``
    field found in it (the official code repairs the JSON with ``json_repair``).
    Raises :class:`UnjudgeableError` when no score in [0, 1] is found.
    """
    text = reply.strip()
    fenced = _FENCED.search(text) if text.startswith("```") else None
    if fenced:
        text = fenced.group(1).strip()
    value = _json_object(text)
    if value is None:
        found = _FIRST_OBJECT.search(text)
        value = _json_object(found.group(1)) if found else None
    if isinstance(value, dict) and "score" in value:
        score: Any = value["score"]
    else:
        field = _SCORE_FIELD.search(text)
        if field is None:
            raise UnjudgeableError(f"no score in the judge's reply: {reply[:200]!r}")
        score = field.group(1)
    try:
        number = float(score)
    except (TypeError, ValueError):
        raise UnjudgeableError(f"the judge's score is not a number: {score!r}") from None
    if isinstance(score, bool) or not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise UnjudgeableError(f"the judge's score is not in [0, 1]: {score!r}")
    return number


def parse_equivalence(reply: str) -> bool:
    """Whether the classifier said the two snippets match: ``"yes"`` anywhere, case ignored.

    As ``llm_equivalence``: every other reply (a bare ``NO``, or none) is a no.
    """
    return "yes" in reply.lower()


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _fill(template: str, **values: str) -> str:
    """``template`` with each ``<name>`` slot in ``values`` replaced, in one pass.

    One pass: a slot-like string inside a filled value (an answer quoting
    ``<question>``) stays as written.
    """
    return _SLOT.sub(lambda m: values.get(m[1], m[0]), template)


def _rubric(result: EvalResult) -> list[str]:
    rubric = result.gold.get("rubric")
    if not (
        isinstance(rubric, (list, tuple)) and rubric and all(isinstance(i, str) for i in rubric)
    ):
        raise ValueError(f"{result.question_id}: gold has no rubric (a list of strings)")
    return list(rubric)


def _prediction(result: EvalResult) -> str:
    if result.prediction is None:
        raise ValueError(f"{result.question_id}: no prediction to judge")
    return result.prediction

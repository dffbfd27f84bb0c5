"""LoCoMo-Plus's ``strict`` judge: upstream's templates without their partial credit or
their leniency.

Written here (issue 32), in upstream's form (same slots, same JSON reply, same parsing
and scores): every fact category has two labels only, so a vague answer, one that
misses part of the reference or adds details it does not have, and an approximate
date or number are wrong, not "partial"; the Cognitive items count a reply correct
only when it uses the cue's specific content, not when it is merely compatible with
it. The adversarial template is upstream's: refusing is already all-or-nothing there.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from himga.benchmarks._judge_prompts import JudgePrompt
from himga.benchmarks.locomo_plus._judge import (
    _FACT_SECTIONS,
    _TWO_LABELS,
    PROMPTS,
    LocomoPlusJudge,
    _template,
)

__all__ = ["STRICT", "STRICT_PROMPTS"]

_STRICT_RULES = (
    '- "wrong": Anything else: a vague, hedged or generic answer; an answer that names '
    "only part of what the reference states; details the reference does not have; several "
    "candidate answers; a date, duration or number that is not exactly the reference's "
    "(only its format may differ).",
)


def _fact(task: str, correct: str) -> str:
    return _template(
        f"You are a strict Fact-Checking Judge.\nYour task: {task}",
        (f'- "correct": {correct}', *_STRICT_RULES),
        _FACT_SECTIONS,
        _TWO_LABELS,
    )


_STRICT = {
    "multi-hop": _fact(
        "Compare the model's prediction with the reference answer (multi-hop fact QA). "
        "There is no partial credit.",
        "The prediction states every entity of the reference answer (names, places, times) "
        "exactly, and nothing the reference contradicts or does not support.",
    ),
    "single-hop": _fact(
        "Compare the model's prediction with the reference answer (single-hop fact QA). "
        "There is no partial credit.",
        "The prediction states the reference answer's specific entity exactly, and nothing "
        "the reference contradicts or does not support.",
    ),
    "temporal": _fact(
        "Check the calculation, duration, or sequence of events. There is no partial credit.",
        "The time, duration, date or order is exactly the reference's, at its precision; "
        'a relative expression ("last week") counts only when it names that same date.',
    ),
    "common-sense": _fact(
        "Assess if the prediction reaches the reference's conclusion by sound "
        "commonsense/world knowledge. There is no partial credit.",
        "The prediction commits to the reference's conclusion, specifically, with no "
        "reasoning the reference contradicts.",
    ),
    "adversarial": PROMPTS["adversarial"],
    "Cognitive": _template(
        "You are a strict Memory Awareness Judge.\n"
        "Your task: Judge whether the Model Prediction uses the specific content of the "
        "Evidence (the earlier cue: a fact, constraint or event the user shared).",
        (
            '- "correct": The prediction uses the evidence\'s specific content: it names or '
            "acts on the particular fact, constraint or event, so it could not have been "
            "written without remembering it.",
            '- "wrong": Anything else: a generic reply that merely does not contradict the '
            "evidence, a vague allusion, or a reply that uses other details.",
        ),
        "Memory/Evidence:\n{evidence}\n\nModel Prediction:\n{pred}",
        _TWO_LABELS,
        "Does the prediction use the evidence's specific content?",
    ),
}

#: The strict templates by upstream category (the same categories as :data:`PROMPTS`).
STRICT_PROMPTS: Mapping[str, str] = MappingProxyType(_STRICT)

STRICT = JudgePrompt(
    "strict",
    ("locomo-plus", "locomo-plus-unified"),
    # A "partial" the model gives anyway is not correct: 0.
    LocomoPlusJudge(
        STRICT_PROMPTS,
        prefix="locomo-plus-strict-",
        scores={"correct": 1.0, "partial": 0.0, "wrong": 0.0},
    ),
    "no partial credit; a Cognitive reply must use the cue's specific content",
)

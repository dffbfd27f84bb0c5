"""BEAM's ``strict`` judge: the rubric judge without partial credit or leniency.

Written here (issue 32), in the form of BEAM's rubric prompt (the same slots
``<question>``, ``<rubric_item>``, ``<llm_response>``, the same JSON reply, parsed the
same way): a rubric item is met (1.0) only when the response states it fully,
specifically and exactly; anything less is 0.0, and a reply of 0.5 is counted 0. Event
ordering keeps BEAM's own alignment and Kendall tau (its equivalence question has no
leniency to remove). Every BEAM tier.
"""

from __future__ import annotations

from himga.benchmarks._judge_prompts import JudgePrompt
from himga.benchmarks.beam._judge import BeamJudge
from himga.benchmarks.beam._manifest import TIERS

__all__ = ["STRICT", "STRICT_RUBRIC_PROMPT"]

STRICT_RUBRIC_PROMPT = """
You are a strict expert evaluator. Judge whether the LLM's response fully complies with the specified RUBRIC CRITERION. There is no partial credit.

## EVALUATION INPUTS
- QUESTION (what the user asked): <question>
- RUBRIC CRITERION (what to check): <rubric_item>
- RESPONSE TO EVALUATE: <llm_response>

## WHAT COUNTS
The rubric states a requirement (something the response SHOULD include or do) or a constraint (something it SHOULD NOT include or do: "no", "not", "avoid", "absent").

- The response must answer the QUESTION. A response that does not is 0.0.
- A requirement is met only when the response states the required content fully, specifically and correctly: every element of a compound criterion ("and", commas), the same names, values and dates. Paraphrases and synonyms that keep the exact meaning are fine; case, punctuation and whitespace do not matter.
- Numbers, amounts, durations and dates must be exactly the rubric's value; only their format may differ ("$68,000" and "68k USD" are equal; "about 70k" is not).
- A vague, hedged or generic statement of the required content does not meet it. Neither does a list of candidates of which one is right.
- Claims that contradict the rubric, or specifics the rubric does not support about the same point, mean the requirement is not met.
- A constraint is met only when the response answers the question and the prohibited element is entirely absent.
- Ignore tone, politeness and length unless the rubric requires a format.

## SCORING
- **1.0**: the criterion is fully met, as above.
- **0.0**: anything else, including a partly met criterion.

## OUTPUT FORMAT:
Return your evaluation in JSON format with two fields:

{
   "score": [your score: 1.0 or 0.0],
   "reason": "[a short explanation of whether the rubric criterion was fully met]"
}

NOTE: ONLY output the json object, without any explanation before or after that
"""  # noqa: E501

STRICT = JudgePrompt(
    "strict",
    tuple(f"beam-{tier.lower()}" for tier in TIERS),
    BeamJudge(rubric_prompt=STRICT_RUBRIC_PROMPT, variant="strict", binary=True),
    "a rubric item counts only when fully, specifically and exactly met (no 0.5)",
)

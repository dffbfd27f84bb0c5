"""LoCoMo's ``strict`` judge prompt: mem0's CORRECT / WRONG judge without its generosity.

Written here (issue 32): mem0's prompt counts an answer that "touches on the same topic"
as correct and lets extra detail pass; this one gives no credit for a vague answer,
for detail that is not the gold's, or for a date or number that is not exactly the
gold's. Same fields, same label, same parsing as the official prompt; adversarial
questions keep LongMemEval's abstention prompt.
"""

from __future__ import annotations

from himga.benchmarks._judge_prompts import JudgePrompt
from himga.benchmarks.locomo._judge import LocomoJudge

__all__ = ["STRICT", "STRICT_PROMPT"]

STRICT_PROMPT = """
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG. Grade strictly:

- The generated answer is CORRECT only if it states the specific content of the gold answer: the same person, thing, event, place, date or value. Being about the same topic is not enough.
- A vague, hedged or generic answer that does not commit to the gold answer's specific content is WRONG.
- Detail beyond the gold answer that is irrelevant to the question, or not supported by the gold answer, makes the answer WRONG. Rephrasing the gold answer, or restating the question around it, is fine.
- Several candidate answers where the gold answer gives one, or a list with items the gold answer does not have, is WRONG.
- Dates must be exact: the same day, month or year as the gold answer, at its precision. A relative reference ("last Tuesday", "next month") counts only when it names that same date; another or an approximate date is WRONG. Only the format may differ ("May 7th" and "7 May" are the same date).
- Numbers, counts, durations and amounts must be exact.

Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""  # noqa: E501

STRICT = JudgePrompt(
    "strict",
    ("locomo",),
    LocomoJudge("locomo-strict", STRICT_PROMPT),
    "no credit for vague answers, extra detail that is not the gold's, inexact dates or numbers",
)

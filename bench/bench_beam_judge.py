"""BEAM's intended vs official answer scoring, measured on a fake judge.

Run by hand (never in the test suite)::

    HIMGA_DATA_DIR=../shared/datasets uv run python bench/bench_beam_judge.py

No LLM: every question of the shared 100K conversations is "answered" with its
gold answer, and a deterministic fake judge gives the verdicts:

* rubric items: 1.0 when every content word of the item (the words after
  ``"LLM response should state:"`` and the like) is in the answer, 0.5 when at
  least half are, else 0.0;
* event ordering: the answer lists the rubric's events one per line, in order,
  either ``compact`` (``"1. A\\n2. B"``) or ``spaced`` (a blank line between
  items, as chat models often write lists); the fake classifier says YES when
  an answer line contains the event.

Both scorings see the same verdicts, so the difference is the scoring alone:
``int(score)`` (0.5 counts 0) and blank lines as events. The unfilled
``<question>`` slot changes every rubric prompt but not this judge's verdicts
(it does not read the question), so its effect is not measured here.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections import defaultdict
from pathlib import Path

from himga.benchmarks import JudgeRequest
from himga.benchmarks.beam import QUESTION_TYPES, BeamBenchmark, BeamJudge
from himga.benchmarks.beam._load import EVENT_ORDERING
from himga.data import QAPair
from himga.scoring._result import EvalResult

_WORD = re.compile(r"[a-z0-9]+")
_BOILERPLATE = re.compile(r"^llm response should (?:state|contain|mention|include)[^:]*:\s*", re.I)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def fake_reply(request: JudgeRequest) -> str:
    """The fake judge's reply to a BEAM request (see the module docstring)."""
    text = request.text
    if "First snippet: " in text:
        event = _between(text, "First snippet: ", " \n")
        line = _between(text, "Second snippet: ", "\n                    ")
        return "YES" if event.lower() in line.lower() else "NO"
    item = _between(text, "RUBRIC CRITERION (what to check): ", "\n- RESPONSE TO EVALUATE: ")
    answer = _between(text, "RESPONSE TO EVALUATE: ", "\n\n## EVALUATION RUBRIC")
    wanted = _words(_BOILERPLATE.sub("", item))
    covered = len(wanted & _words(answer)) / len(wanted) if wanted else 1.0
    score = 1.0 if covered == 1.0 else 0.5 if covered >= 0.5 else 0.0
    return json.dumps({"score": score, "reason": "fake"})


def _result(sample_id: str, qa: QAPair, prediction: str) -> EvalResult:
    return EvalResult(
        sample_id=sample_id,
        question_id=qa.question_id,
        dataset="beam-100k",
        category=qa.category,
        question=qa.question,
        answer=qa.answer,
        adversarial=qa.adversarial,
        evidence_turns=(),
        evidence_texts=(),
        context="",
        ranked_turn_ids=None,
        retrieval_latency_s=0.0,
        prediction=prediction,
        gold=qa.gold,
    )


def main() -> None:
    data_dir = Path(os.environ.get("HIMGA_DATA_DIR", "../shared/datasets"))
    beam = BeamBenchmark("100K")
    tier = beam.locate(data_dir)
    if tier is None:
        raise SystemExit(f"no BEAM 100K tier under {data_dir}")
    judges = {"intended": BeamJudge(), "official": BeamJudge(official=True)}
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    requests: dict[str, int] = defaultdict(int)
    for sample in beam.load(tier, None):
        for qa in sample.qa_pairs:
            rubric = list(qa.gold["rubric"])
            if qa.category == EVENT_ORDERING:
                answers = {
                    "compact": "\n".join(f"{i}. {e}" for i, e in enumerate(rubric, 1)),
                    "spaced": "\n\n".join(f"{i}. {e}" for i, e in enumerate(rubric, 1)),
                }
            else:
                answers = {"": qa.answer}
            for style, prediction in answers.items():
                row = f"{qa.category} ({style})" if style else qa.category
                result = _result(sample.sample_id, qa, prediction)
                for mode, judge in judges.items():
                    asked = judge.requests(result)
                    requests[mode] += len(asked)
                    parsed = [judge.parse(r, fake_reply(r)) for r in asked]
                    scores[(row, mode)].append(judge.score(result, parsed))
    rows = sorted({row for row, _ in scores}, key=lambda r: (QUESTION_TYPES.index(r.split()[0]), r))
    print("| question type | n | intended | official | official - intended |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        intended = statistics.fmean(scores[(row, "intended")])
        official = statistics.fmean(scores[(row, "official")])
        n = len(scores[(row, "intended")])
        print(f"| {row} | {n} | {intended:.3f} | {official:.3f} | {official - intended:+.3f} |")
    for style in ("compact", "spaced"):
        picked = [r for r in rows if not r.startswith(EVENT_ORDERING) or style in r]
        means = {
            mode: statistics.fmean(statistics.fmean(scores[(r, mode)]) for r in picked)
            for mode in judges
        }
        print(
            f"| all ten types, event ordering {style} | 200 | {means['intended']:.3f} | "
            f"{means['official']:.3f} | {means['official'] - means['intended']:+.3f} |"
        )
    for mode in judges:
        print(f"{mode}: {requests[mode]} judge requests")


if __name__ == "__main__":
    main()

"""The ``strict`` judge prompt of every benchmark (issue 32): LoCoMo, LongMemEval,
LoCoMo-Plus and every BEAM tier have one in the bank; it judges with templates of its
own (so a run's identity tells it apart; BEAM's event-ordering equivalence, which has no
leniency to remove, is shared), the fake LLM speaks it, and where the official judge
gives partial credit the strict one gives none."""

from __future__ import annotations

import dataclasses

import pytest

from himga.benchmarks import Judge, benchmarks
from himga.benchmarks._judge_prompts import get_judge_prompt, judge_prompts
from himga.benchmarks.beam._strict import STRICT_RUBRIC_PROMPT
from himga.scoring import EvalResult
from tests.eval.test_eval_support import make_result
from tests.eval.test_judge_offline import RIGHT, WRONG, _judged

PLUS = {"evidence": "Ann went to Paris in May", "upstream_category": "single-hop"}
#: A prediction holding half the gold's words: official partial credit, strict none.
HALF = "She went to Paris"


def _strict(benchmark: str) -> Judge:
    return get_judge_prompt(benchmark, "strict").judge


def test_every_shipped_benchmark_has_a_strict_judge_with_templates_of_its_own() -> None:
    for name in benchmarks():
        assert "strict" in judge_prompts(name), name
        strict, official = _strict(name), get_judge_prompt(name).judge
        assert strict.prompts != official.prompts, name
        # A template both send (BEAM's event equivalence) is one name for one text.
        for shared in set(strict.prompts) & set(official.prompts):
            assert strict.prompts[shared] == official.prompts[shared], (name, shared)


@pytest.mark.parametrize(
    ("benchmark", "result"),
    [
        ("locomo-plus", make_result(dataset="locomo-plus", gold=PLUS, prediction=RIGHT)),
        (
            "locomo-plus",
            make_result(
                dataset="locomo-plus",
                gold={**PLUS, "upstream_category": "Cognitive"},
                prediction=RIGHT,
            ),
        ),
        (
            "beam-100k",
            make_result(dataset="beam-100k", gold={"rubric": ["went to Paris", "in May"]}),
        ),
    ],
    ids=["plus-single-hop", "plus-cognitive", "beam-rubric"],
)
def test_the_fake_llm_speaks_the_strict_judges(benchmark: str, result: EvalResult) -> None:
    result = dataclasses.replace(result, prediction=RIGHT)
    judge = _strict(benchmark)
    assert _judged(judge, result) == 1.0
    assert _judged(judge, dataclasses.replace(result, prediction=WRONG)) == 0.0


def test_half_an_answer_earns_partial_credit_officially_and_none_strictly() -> None:
    plus = make_result(dataset="locomo-plus", gold=PLUS, answer="went to Paris in May")
    beam = make_result(dataset="beam-100k", gold={"rubric": ["went to Paris in May"]})
    for benchmark, result in (("locomo-plus", plus), ("beam-100k", beam)):
        half = dataclasses.replace(result, prediction=HALF)
        assert _judged(get_judge_prompt(benchmark).judge, half) == 0.5, benchmark
        assert _judged(_strict(benchmark), half) == 0.0, benchmark


def test_a_partial_verdict_the_model_gives_anyway_counts_nothing_strictly() -> None:
    plus = make_result(dataset="locomo-plus", gold=PLUS, prediction=HALF)
    judge = _strict("locomo-plus")
    (request,) = judge.requests(plus)
    assert '"partial"' not in request.text  # not offered
    assert judge.score(plus, [judge.parse(request, '{"label": "partial"}')]) == 0.0
    beam = make_result(dataset="beam-100k", gold={"rubric": ["in May"]}, prediction=HALF)
    judge = _strict("beam-100k")
    (request,) = judge.requests(beam)
    assert request.text.startswith(STRICT_RUBRIC_PROMPT.split("<question>")[0])
    assert judge.score(beam, [judge.parse(request, '{"score": 0.5}')]) == 0.0

"""The fake LLM speaks every judge: each judge's ``offline_reply`` is a verdict its own
``parse`` reads, decided from the request (right answers score 1, wrong ones 0), and
``himga fake-llm`` + ``himga eval`` judge every BEAM answer."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga.benchmarks import Judge, _registry, get_benchmark, register_benchmark
from himga.benchmarks.beam import BeamJudge
from himga.benchmarks.locomo import LocomoJudge
from himga.benchmarks.locomo_plus import LocomoPlusJudge
from himga.benchmarks.longmemeval import LongMemEvalJudge
from himga.eval import EvalResult
from himga.eval.judge import offline_judge_responder
from himga.llm import FakeLLMServer
from tests.data_fixtures import read_run
from tests.eval.test_eval_support import make_result
from tests.external_benchmark import ToyJudge, ToyQA, write_toyqa
from tests.fake_llm_support import fake_llm_command, point_at

RIGHT = "She went to Paris in May"
WRONG = "Berlin"


def _cases() -> list[tuple[str, Judge, EvalResult]]:
    """(name, judge, a result answered RIGHT whose gold the prediction WRONG misses)."""
    plus = {"evidence": "Ann went to Paris in May", "upstream_category": "single-hop"}
    rubric = {"rubric": ["went to Paris", "in May"]}
    return [
        ("locomo", LocomoJudge(), make_result(answer="Paris", prediction=RIGHT)),
        (
            "longmemeval",
            LongMemEvalJudge(),
            make_result(dataset="longmemeval_s", category="multi-session", prediction=RIGHT),
        ),
        (
            "longmemeval-temporal",
            LongMemEvalJudge(),
            make_result(dataset="longmemeval_s", category="temporal-reasoning", prediction=RIGHT),
        ),
        ("locomo-plus", LocomoPlusJudge(), make_result(gold=plus, prediction=RIGHT)),
        (
            "locomo-plus-cognitive",
            LocomoPlusJudge(),
            make_result(gold={**plus, "upstream_category": "Cognitive"}, prediction=RIGHT),
        ),
        ("beam-rubric", BeamJudge(), make_result(gold=rubric, prediction=RIGHT)),
        ("beam-official", BeamJudge(official=True), make_result(gold=rubric, prediction=RIGHT)),
        ("toyqa", ToyJudge(), make_result(gold={"keywords": ["Paris"]}, prediction=RIGHT)),
    ]


def _judged(judge: Judge, result: EvalResult) -> float:
    parsed = []
    for request in judge.requests(result):
        reply = judge.offline_reply(request.text)
        assert reply is not None, request.prompt
        parsed.append(judge.parse(request, reply))
    return judge.score(result, parsed)


@pytest.mark.parametrize(("name", "judge", "result"), _cases(), ids=[c[0] for c in _cases()])
def test_each_judge_replies_with_a_verdict_it_parses(
    name: str, judge: Judge, result: EvalResult
) -> None:
    assert isinstance(judge, Judge)
    assert _judged(judge, result) == 1.0
    assert _judged(judge, dataclasses.replace(result, prediction=WRONG)) == 0.0


def test_abstention_prompts_are_judged_by_whether_the_answer_abstains() -> None:
    for judge, dataset in ((LocomoJudge(), "locomo"), (LongMemEvalJudge(), "longmemeval_s")):
        unanswerable = make_result(dataset=dataset, category="adversarial", adversarial=True)
        refused = dataclasses.replace(unanswerable, prediction="Not mentioned.")
        assert _judged(judge, refused) == 1.0
        assert _judged(judge, unanswerable) == 0.0  # it answered "Paris"


def test_event_ordering_aligns_the_lines_the_offline_judge_matches() -> None:
    events = ["booked the flight", "packed the bags", "flew to Paris"]
    result = make_result(
        category="event_ordering",
        gold={"rubric": events},
        prediction="I booked the flight\nthen packed the bags\nand flew to Paris",
    )
    assert _judged(BeamJudge(), result) == 1.0
    reversed_order = dataclasses.replace(result, prediction="\n".join(events[::-1]))
    assert _judged(BeamJudge(), reversed_order) == 0.0


def test_a_request_of_another_judge_or_an_answer_prompt_is_not_answered() -> None:
    judges = [case[1] for case in _cases()]
    locomo_text = LocomoJudge().requests(make_result())[0].text
    assert [j.offline_reply(locomo_text) is not None for j in judges] == [
        isinstance(j, LocomoJudge) for j in judges
    ]
    assert all(j.offline_reply("Question: where? Short answer:") is None for j in judges)
    answer = offline_judge_responder([{"role": "user", "content": "hello there"}])
    assert answer == "echo: hello there"


@pytest.mark.integration
def test_fake_llm_and_eval_judge_every_beam_answer(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before Judge.offline_reply, 36 of BEAM-100K's first 40 answers were unjudgeable."""
    get_benchmark("beam-100k")
    with fake_llm_command() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "fake")
        out = tmp_path / "run"
        argv = ["eval", "--dataset", "beam-100k", "--llm", "openai", "--model", "fake"]
        argv += ["--limit", "1", "--no-preflight", "--no-progress", "--out", str(out)]
        assert main(argv) == 0
    results, metrics, _ = read_run(out)
    assert metrics["counts"]["judge_errors"] == 0
    assert len(results) == metrics["counts"]["judged"] == 20
    assert all(r["judge"] is not None and not math.isnan(r["judge"]) for r in results)
    assert {r["category"] for r in results} == set(get_benchmark("beam-100k").categories)
    assert json.loads((out / "manifest.json").read_text("utf-8"))["judge"]["errors"] == 0


class _OldToyJudge:
    """A plug-in judge written before ``offline_reply``: it judges, but cannot tell the fake
    what its verdict looks like."""

    prompts = ToyJudge.prompts
    requests = ToyJudge.requests
    parse = ToyJudge.parse
    score = ToyJudge.score


@pytest.mark.parametrize(("judge", "status"), [(ToyJudge(), 0), (_OldToyJudge(), 3)])
def test_a_plug_in_is_judged_offline_through_its_offline_reply(
    judge: Any, status: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_registry._benchmarks.registered, "entries", {})
    register_benchmark(dataclasses.replace(ToyQA(name="toyqa-offline"), judge=judge))
    data = write_toyqa(tmp_path / "toyqa.json")
    out = tmp_path / "run"
    with FakeLLMServer(responder=offline_judge_responder) as server:
        point_at(server, "openai", monkeypatch)
        argv = ["eval", "--dataset", "toyqa-offline", "--data-path", str(data)]
        argv += ["--llm", "openai", "--no-preflight", "--no-progress", "--out", str(out)]
        assert main(argv) == status
    results, metrics, _ = read_run(out)
    if status == 0:
        assert metrics["counts"]["judged"] == len(results) == 4
    else:  # never a score: every answer is a judge error
        assert metrics["counts"]["judge_errors"] == len(results) == 4
        assert all(r["judge"] is None for r in results)

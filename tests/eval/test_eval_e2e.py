"""End to end through get_client, the official SDKs and a loopback FakeLLMServer.

The seed's section 5.3 example runs verbatim over the real LoCoMo-10 while the
server fails 5 % of the requests at random with 429 / 500 / 529 (the client
retries up to 5 times): all 1,986 questions come back, none lost, none duplicated.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.benchmarks.longmemeval.synthetic import write_longmemeval
from himga.data import Category
from himga.eval import batch_judge, compute_metrics, run_eval
from himga.llm import ChatMessage, FakeLLMServer, get_client
from himga.memory import NullMemory
from tests.eval.test_eval_support import make_sample
from tests.fake_llm_support import answer_and_judge


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:  # the LoCoMo judge
        return 'It touches the same topic. {"label": "CORRECT"}'
    if "Answer yes or no only." in prompt:  # the abstention judge
        return "yes"
    return "Not mentioned in the conversation"


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(
        responder=_responder,
        faults=(429, 500, 529),
        fault_rate=0.05,
        fault_statuses=(429, 500, 529),
    ) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        yield server


@pytest.mark.slow
def test_seed_example_runs_verbatim_over_locomo_under_faults(
    anthropic_server: FakeLLMServer, shared_datasets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    # fmt: off
    memory = NullMemory(); llm = get_client("anthropic"); agent = BaseAgent(memory=memory, llm=llm)  # noqa: E702
    samples = load_dataset("locomo"); results = run_eval(samples, agent=agent, show_progress=True)  # noqa: E702
    judge_scores = batch_judge(results, llm=llm); metrics = compute_metrics(results, judge_scores)  # noqa: E702
    print(metrics["overall"])
    # fmt: on
    expected = [(s.sample_id, qa.question_id) for s in samples for qa in s.qa_pairs]
    assert len(expected) == 1986
    assert [r.key for r in results] == expected
    assert metrics["counts"]["errors"] == 0
    assert metrics["counts"]["judged"] == 1986
    assert metrics["overall"]["questions"] == 1540
    assert metrics["overall_with_adversarial"]["judge"] == 1.0
    assert all(r.prediction == "Not mentioned in the conversation" for r in results)
    # LoCoMo's official adversarial rule scores that answer 1, the others ~0
    assert metrics["by_category"]["adversarial"]["f1"] == 1.0
    statuses = [r.status for r in anthropic_server.requests]
    assert {429, 500, 529} <= set(statuses)  # faults happened and were retried through
    assert statuses.count(200) == llm.usage.calls >= 1986 + 1900  # answers + distinct verdicts
    assert llm.usage.failed_calls == 0
    assert sum(r.input_tokens for r in results) > 0


def test_calls_failing_after_retries_are_errors_and_a_rerun_repairs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = [make_sample(f"s{i}", questions=10) for i in range(3)]
    with FakeLLMServer(responder=_responder, fault_rate=0.4, fault_statuses=(500,)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        llm = get_client("anthropic", max_retries=0)
        agent = BaseAgent(memory=NullMemory(), llm=llm)
        checkpoint = tmp_path / "run.jsonl"
        first = run_eval(samples, agent=agent, checkpoint=checkpoint, show_progress=False)
        errors = [r for r in first if r.error is not None]
        assert errors  # with a 40 % fault rate and no retries some calls fail ...
        assert all("500" in (r.error or "") for r in errors)
        assert len(first) == 30  # ... and are reported, not dropped
        metrics = compute_metrics(first)
        assert metrics["counts"]["errors"] == len(errors)
        assert metrics["overall_with_adversarial"]["answered"] == 30 - len(errors)

        server.fault_rate = 0.0
        server.reset_stats()
        second = run_eval(samples, agent=agent, checkpoint=checkpoint, show_progress=False)
        assert server.request_count == len(errors)
        assert [r.key for r in second] == [r.key for r in first]
        assert all(r.error is None for r in second)


def test_the_openai_sdk_path_answers_and_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = [make_sample("s", questions=5)]
    with FakeLLMServer(responder=_responder, fail_first=1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-key")
        llm = get_client("openai")
        results = run_eval(
            samples, agent=BaseAgent(memory=NullMemory(), llm=llm), show_progress=False
        )
        scores = batch_judge(results, llm=llm, show_progress=False)
    assert all(r.prediction == "Not mentioned in the conversation" for r in results)
    assert list(scores) == [1.0] * 5
    assert scores.temperature == 0.0
    assert {r.api for r in server.requests} == {"openai"}


def test_longmemeval_file_through_loader_eval_and_official_judge_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "longmemeval_s.json"
    write_longmemeval(path, questions=16, sessions=3, turns=2, turn_chars=40)
    samples = load_dataset("longmemeval_s", path=path)
    results, scores, requests = answer_and_judge(samples, _responder, "openai", monkeypatch)
    assert len(results) == 16
    answers, verdicts = requests[:16], requests[16:]
    by_question = {s.qa_pairs[0].question: s for s in samples}
    for request in answers:
        prompt = request.messages[-1]["content"]
        question = prompt.rsplit("Question: ", 1)[1].removesuffix(" Short answer:")
        assert f"Current date: {by_question[question].question_date}" in prompt
    expected_prompts = {
        Category.TEMPORAL_REASONING.value: "do not penalize off-by-one errors",
        Category.KNOWLEDGE_UPDATE.value: "along with an updated answer",
        Category.SINGLE_SESSION_PREFERENCE.value: "Rubric:",
    }
    judged = {r.messages[-1]["content"] for r in verdicts}
    for result in results:
        [prompt] = [p for p in judged if f"Question: {result.question}\n" in p]
        if result.adversarial:
            assert "unanswerable" in prompt
        elif result.category in expected_prompts:
            assert expected_prompts[result.category] in prompt
        else:
            assert "Correct Answer:" in prompt
            assert not any(marker in prompt for marker in expected_prompts.values())
    assert list(scores) == [1.0] * 16
    metrics = compute_metrics(results, scores)
    assert metrics["overall"] == metrics["overall_with_adversarial"]  # abstention counts
    assert metrics["overall"]["ranked"] == 16  # has_answer turns are the evidence
    turns = {s.sample_id: {m.turn_id for _, m in s.iter_turns()} for s in samples}
    for result in results:
        assert set(result.evidence_turns) <= turns[result.sample_id]
        assert set(result.ranked_turn_ids or ()) <= turns[result.sample_id]

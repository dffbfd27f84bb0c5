"""run_eval's contract: reset, ingest once, retrieve per question, errors, no gold leak."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.agent import BaseAgent
from himga.data.schema import Category, Message, QAPair, Sample, Session
from himga.eval import DuplicateQuestionError, EvalResult, arun_eval, compute_metrics, run_eval
from himga.memory import NullMemory
from tests.eval.test_eval_support import RecordingMemory, ScriptedLLM, make_sample


def test_one_result_per_question_in_order_with_reset_and_single_ingest() -> None:
    samples = [make_sample("a", questions=4), make_sample("b", sessions=3, questions=2)]
    memory = RecordingMemory()
    llm = ScriptedLLM()
    results = run_eval(samples, agent=BaseAgent(memory=memory, llm=llm), show_progress=False)
    assert [r.key for r in results] == [
        (s.sample_id, qa.question_id) for s in samples for qa in s.qa_pairs
    ]
    kinds = [entry[0] for entry in memory.log]
    # per sample: reset, every message once, then retrieve + search per question
    expected = []
    for sample in samples:
        expected += ["reset"] + ["ingest"] * sum(len(s.messages) for s in sample.sessions)
        expected += ["retrieve", "search"] * len(sample.qa_pairs)
    assert kinds == expected
    assert all(r.prediction == "an answer" and r.error is None for r in results)
    assert len(llm.calls) == 6


def test_result_records_gold_context_ranking_and_usage() -> None:
    sample = make_sample("a", questions=1)
    [result] = run_eval(
        [sample], agent=BaseAgent(memory=RecordingMemory(), llm=ScriptedLLM()), show_progress=False
    )
    qa = sample.qa_pairs[0]
    assert (result.question, result.answer, result.category) == (
        qa.question,
        qa.answer,
        qa.category,
    )
    assert result.evidence_turns == ("D1:1",)
    assert result.evidence_texts == ("topic1x1 was discussed in a",)
    assert "topic1x1 was discussed in a" in result.context
    assert result.ranked_turn_ids == ("D1:1",)
    assert result.model == "scripted-1"
    assert result.input_tokens > 0
    assert result.output_tokens == 2
    assert result.latency_s is not None
    assert EvalResult.from_dict(result.to_dict()) == result


def test_memory_that_cannot_search_gets_no_ranking() -> None:
    [result] = run_eval(
        [make_sample("a", questions=1)], agent=BaseAgent(memory=NullMemory()), show_progress=False
    )
    assert result.ranked_turn_ids is None
    assert result.context == ""


def test_without_an_llm_the_run_records_retrieval_only() -> None:
    results = run_eval(
        [make_sample("a"), make_sample("b")],
        agent=BaseAgent(memory=RecordingMemory()),
        show_progress=False,
    )
    assert len(results) == 6
    assert all(r.prediction is None and r.error is None for r in results)
    assert all(r.ranked_turn_ids for r in results)
    metrics = compute_metrics(results)
    assert metrics["counts"]["unanswered"] == 6
    assert metrics["overall_with_adversarial"]["context_recall"] == 1.0


def test_failed_calls_become_errors_and_the_run_goes_on() -> None:
    samples = [make_sample("a", questions=5), make_sample("b", questions=5)]
    llm = ScriptedLLM(fail=lambda prompt: "topic1x2" in prompt)
    results = run_eval(
        samples, agent=BaseAgent(memory=RecordingMemory(), llm=llm), show_progress=False
    )
    failed = [r for r in results if r.error is not None]
    assert failed
    assert all("topic1x2" in r.question for r in failed)
    assert all("LLMFailure" in (r.error or "") and r.prediction is None for r in failed)
    assert all(r.prediction == "an answer" for r in results if "topic1x2" not in r.question)
    metrics = compute_metrics(results)
    assert metrics["counts"]["errors"] == len(failed)
    assert {e["question_id"] for e in metrics["errors"]} == {r.question_id for r in failed}
    # errors are not scored: the answered ones are
    assert metrics["overall_with_adversarial"]["answered"] == len(results) - len(failed)


def test_concurrency_is_bounded_by_the_client() -> None:
    llm = ScriptedLLM(delay=0.01, max_concurrency=3)
    samples = [make_sample(f"s{i}", questions=5) for i in range(4)]
    run_eval(samples, agent=BaseAgent(memory=NullMemory(), llm=llm), show_progress=False)
    assert llm.max_in_flight == 3
    capped = ScriptedLLM(delay=0.01, max_concurrency=8)
    run_eval(
        samples,
        agent=BaseAgent(memory=NullMemory(), llm=capped),
        show_progress=False,
        max_concurrency=2,
    )
    assert capped.max_in_flight == 2


def test_concurrency_below_one_is_refused() -> None:
    agent = BaseAgent(memory=NullMemory(), llm=ScriptedLLM())
    with pytest.raises(ValueError, match="max_concurrency"):
        run_eval([make_sample("a")], agent=agent, show_progress=False, max_concurrency=0)


def test_duplicate_question_ids_are_refused() -> None:
    sample = make_sample("a", questions=2)
    with pytest.raises(DuplicateQuestionError, match="'a'"):
        run_eval([sample, sample], agent=BaseAgent(memory=NullMemory()), show_progress=False)


def test_gold_data_never_reaches_memory_or_llm() -> None:
    samples = [make_sample("a", questions=5), make_sample("b", questions=5)]
    memory = RecordingMemory()
    llm = ScriptedLLM()
    seen_by_agent: list[Sample] = []

    class SpyAgent(BaseAgent):
        def ingest_sample(self, sample: Sample) -> None:
            seen_by_agent.append(sample)
            super().ingest_sample(sample)

    run_eval(samples, agent=SpyAgent(memory=memory, llm=llm), show_progress=False)
    assert all(s.qa_pairs == () and dict(s.metadata) == {} for s in seen_by_agent)
    gold = [qa.answer for s in samples for qa in s.qa_pairs] + ["GOLDMETA"]
    for entry in memory.log:
        for argument in entry[1:]:
            assert isinstance(argument, (Message, Session, str, int))
            assert not any(g in repr(argument) for g in gold), entry
    for call in llm.calls:
        assert not any(g in message["content"] for message in call for g in gold)


def test_ids_that_name_the_gold_never_reach_memory_or_agent() -> None:
    # LongMemEval's own ids: evidence sessions are "answer_...", and an
    # abstention question's sample id ends in "_abs".
    sessions = [
        Session(
            session_id=session_id,
            messages=[
                Message("user", f"I adopted a {pet} last week", turn_id=f"{session_id}:0"),
                Message("assistant", "Congratulations!", turn_id=f"{session_id}:1"),
            ],
            date_str="2023/05/20 (Sat) 02:21",
        )
        for session_id, pet in (("sharegpt_x1", "parrot"), ("answer_f00d_1", "cat"))
    ]
    qa = QAPair(
        question_id="e47becba_abs",
        question="Which pet did I adopt?",
        answer="a cat",
        category=Category.SINGLE_SESSION_USER,
        evidence=("answer_f00d_1",),
        evidence_turns=("answer_f00d_1:0",),
        adversarial=True,
    )
    sample = Sample("e47becba_abs", "longmemeval", sessions, [qa], question_date="2023/05/30")
    memory = RecordingMemory()
    seen_by_agent: list[Sample] = []

    class SpyAgent(BaseAgent):
        def ingest_sample(self, sample: Sample) -> None:
            seen_by_agent.append(sample)
            super().ingest_sample(sample)

    [result] = run_eval([sample], agent=SpyAgent(memory=memory), show_progress=False)
    assert "answer_" not in repr(memory.log)
    assert not any(word in repr(seen_by_agent) for word in ("answer_", "_abs", "sharegpt"))
    # the ranking comes back in the sample's ids: both "adopt" turns, in order
    assert result.ranked_turn_ids == ("sharegpt_x1:0", "answer_f00d_1:0")
    assert result.evidence_texts == ("I adopted a cat last week",)


def test_arun_eval_runs_inside_a_running_loop() -> None:
    async def main() -> list[EvalResult]:
        return await arun_eval(
            [make_sample("a")],
            agent=BaseAgent(memory=NullMemory(), llm=ScriptedLLM()),
            show_progress=False,
        )

    assert len(asyncio.run(main())) == 3


@given(
    shape=st.lists(st.integers(min_value=0, max_value=4), min_size=0, max_size=4),
    failing=st.sets(st.integers(min_value=1, max_value=3)),
)
def test_every_question_comes_back_once_whatever_fails(shape: list[int], failing: set[int]) -> None:
    samples = [make_sample(f"s{i}", questions=n) for i, n in enumerate(shape)]
    llm = ScriptedLLM(fail=lambda prompt: any(f"topic1x{f}?" in prompt for f in failing))
    results = run_eval(samples, agent=BaseAgent(memory=NullMemory(), llm=llm), show_progress=False)
    assert [r.key for r in results] == [
        (s.sample_id, q.question_id) for s in samples for q in s.qa_pairs
    ]
    for r in results:
        should_fail = any(f"topic1x{f}?" in r.question for f in failing)
        assert (r.error is not None) == should_fail
        assert (r.prediction is None) == should_fail


def test_each_prompt_carries_its_own_samples_date_while_later_samples_ingest() -> None:
    # One call at a time, slow: sample b is ingested (changing the agent's current
    # date) long before sample a's questions are sent.
    samples = [make_sample("a", sessions=2, questions=4), make_sample("b", sessions=3, questions=4)]
    llm = ScriptedLLM(delay=0.01, max_concurrency=1)
    run_eval(samples, agent=BaseAgent(memory=RecordingMemory(), llm=llm), show_progress=False)
    for call in llm.calls:
        prompt = call[0]["content"]
        expected = "2 May" if "discussed in a" in prompt else "3 May"
        assert f"Current date: 1:56 pm on {expected}, 2023" in prompt

"""BaseAgent: what the memory receives, what the prompt says, how the LLM is called."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from himga.agent import PROMPT_TEMPLATES, BaseAgent, NoLLMError, prompt_hashes
from himga.data.schema import Message, Sample, Session
from himga.memory import NullMemory
from tests.eval.test_eval_support import RecordingMemory, ScriptedLLM, make_sample


def test_ingest_sample_feeds_every_message_with_its_session_in_order() -> None:
    memory = RecordingMemory()
    sample = make_sample("s1", sessions=3, turns=4)
    BaseAgent(memory=memory).ingest_sample(sample)
    ingested = [(entry[1], entry[2]) for entry in memory.calls("ingest")]
    assert ingested == [(message, session) for session, message in sample.iter_turns()]
    assert all(
        type(message) is Message and type(session) is Session for message, session in ingested
    )
    assert memory.calls("reset") == []  # resetting is the caller's decision


def test_current_date_is_the_question_date_else_the_last_session_date() -> None:
    agent = BaseAgent(memory=NullMemory())
    sample = make_sample("s1", sessions=3)
    agent.ingest_sample(sample)
    assert agent.current_date == "1:56 pm on 3 May, 2023"
    agent.ingest_sample(
        Sample(sample_id="s2", dataset="longmemeval", sessions=(), question_date="2023/05/30")
    )
    assert agent.current_date == "2023/05/30"


def test_prompt_carries_context_date_and_question() -> None:
    agent = BaseAgent(memory=NullMemory())
    agent.ingest_sample(make_sample("s1", sessions=2))
    [message] = agent.build_prompt("Where did Ann go?", "[8 May] Ann: went to Paris\n")
    assert message["role"] == "user"
    text = message["content"]
    assert "[8 May] Ann: went to Paris" in text
    assert "Current date: 1:56 pm on 2 May, 2023" in text
    assert text.endswith("Question: Where did Ann go? Short answer:")
    assert "short phrase" in text
    assert "answer: Not mentioned in the conversation." in text  # category-blind abstention


@pytest.mark.parametrize("context", ["", "  \n\t "])
def test_prompt_without_context_has_no_context_section(context: str) -> None:
    agent = BaseAgent(memory=NullMemory())
    [message] = agent.build_prompt("Where did Ann go?", context)
    text = message["content"]
    assert "context" not in text.lower()
    assert "Current date" not in text  # nothing ingested: no date known
    assert "answer: Not mentioned in the conversation." in text
    assert text.endswith("Question: Where did Ann go? Short answer:")


def test_answer_retrieves_then_asks_the_llm() -> None:
    memory = RecordingMemory()
    llm = ScriptedLLM(reply=lambda messages: "  Paris \n")
    agent = BaseAgent(memory=memory, llm=llm)
    agent.ingest_sample(make_sample("s1"))
    assert agent.answer("topic1x2 where?") == "Paris"
    assert memory.calls("retrieve") == [("retrieve", "topic1x2 where?")]
    [prompt] = llm.calls
    assert "topic1x2 was discussed in s1" in prompt[0]["content"]


def test_aanswer_reports_usage_and_uses_the_given_context() -> None:
    memory = RecordingMemory()
    llm = ScriptedLLM(reply=lambda messages: "two words")
    agent = BaseAgent(memory=memory, llm=llm)
    answer = asyncio.run(agent.aanswer("q?", context="given context"))
    assert answer.text == "two words"
    assert answer.context == "given context"
    assert answer.output_tokens == 2
    assert answer.input_tokens == len(llm.calls[0][0]["content"].split())
    assert answer.model == "scripted-1"
    assert answer.latency_s >= 0
    assert memory.calls("retrieve") == []


def test_a_reply_budget_below_one_token_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        BaseAgent(memory=NullMemory(), llm=ScriptedLLM(), max_tokens=0)


def test_answering_without_an_llm_is_a_clear_error() -> None:
    agent = BaseAgent(memory=NullMemory())
    with pytest.raises(NoLLMError, match="llm"):
        agent.answer("q?")
    with pytest.raises(NoLLMError):
        asyncio.run(agent.aanswer("q?", context=""))


def test_prompt_hashes_are_sha256_of_the_templates() -> None:
    hashes = prompt_hashes()
    assert set(hashes) == set(PROMPT_TEMPLATES)
    for name, template in PROMPT_TEMPLATES.items():
        assert hashes[name] == hashlib.sha256(template.encode()).hexdigest()

"""Test doubles shared by the agent and evaluation tests (this module has no tests).

``ScriptedLLM`` is an in-process :class:`~himga.llm.LLMClient`; ``RecordingMemory``
logs every call it receives; ``make_sample`` builds LoCoMo-shaped samples whose
gold strings never occur in the conversation, so a leak is detectable;
``make_result`` builds one :class:`~himga.eval.EvalResult`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from himga.data.schema import Category, Message, QAPair, Sample, Session
from himga.llm._protocol import ChatMessage, Completion
from himga.memory._protocol import Hit
from himga.scoring._result import EvalResult


def last_user_text(messages: Sequence[ChatMessage]) -> str:
    return messages[-1]["content"]


class LLMFailure(RuntimeError):
    """What ScriptedLLM raises for a prompt it was told to fail."""


class ScriptedLLM:
    """Replies ``reply(messages)``; raises :class:`LLMFailure` when ``fail(prompt)`` is true."""

    provider = "scripted"
    model = "scripted-1"

    def __init__(
        self,
        reply: Callable[[Sequence[ChatMessage]], str] = lambda messages: "an answer",
        *,
        fail: Callable[[str], bool] = lambda prompt: False,
        delay: float = 0.0,
        max_concurrency: int = 4,
    ) -> None:
        self._reply = reply
        self._fail = fail
        self._delay = delay
        self._max_concurrency = max_concurrency
        self.calls: list[list[ChatMessage]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def max_concurrency(self) -> int:
        return self._max_concurrency

    def chat(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> str:
        self.calls.append(list(messages))
        if self._fail(last_user_text(messages)):
            raise LLMFailure("scripted failure")
        return self._reply(messages)

    async def achat(
        self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None
    ) -> Completion:
        self.calls.append(list(messages))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self._delay)
            if self._fail(last_user_text(messages)):
                raise LLMFailure("scripted failure after retries")
            text = self._reply(messages)
        finally:
            self.in_flight -= 1
        prompt_words = sum(len(m["content"].split()) for m in messages)
        return Completion(text, prompt_words, len(text.split()), self.model)


class RecordingMemory:
    """Stores turns, logs every call; retrieve/search match turns sharing a word with the query."""

    def __init__(self) -> None:
        self.log: list[tuple[object, ...]] = []
        self._turns: list[tuple[Message, Session]] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self.log.append(("ingest", message, session))
        self._turns.append((message, session))

    def _matches(self, query: str) -> list[tuple[Message, Session]]:
        words = set(re.findall(r"\w+", query.lower()))
        return [
            (m, s) for m, s in self._turns if words & set(re.findall(r"\w+", m.content.lower()))
        ]

    def retrieve(self, query: str, /) -> str:
        self.log.append(("retrieve", query))
        return "\n".join(f"[{s.date_str}] {m.role}: {m.content}" for m, s in self._matches(query))

    def search(self, query: str, k: int, /) -> list[Hit]:
        self.log.append(("search", query, k))
        return [Hit(m.turn_id, 1.0, m.content) for m, _ in self._matches(query)][:k]

    def reset(self) -> None:
        self.log.append(("reset",))
        self._turns.clear()

    def calls(self, name: str) -> list[tuple[object, ...]]:
        return [entry for entry in self.log if entry[0] == name]


def make_sample(sample_id: str, sessions: int = 2, turns: int = 3, questions: int = 3) -> Sample:
    """A LoCoMo-shaped sample; question ``q`` asks about turn ``D1:<q+1>``'s topic."""
    built = [
        Session(
            session_id=f"{sample_id}-s{s}",
            messages=[
                Message(
                    role="Ann" if t % 2 else "Bob",
                    content=f"topic{s}x{t} was discussed in {sample_id}",
                    turn_id=f"D{s}:{t}",
                )
                for t in range(1, turns + 1)
            ],
            date_str=f"1:56 pm on {s} May, 2023",
        )
        for s in range(1, sessions + 1)
    ]
    codes = [1, 2, 3, 4, 5]
    qa = [
        QAPair(
            question_id=f"{sample_id}-q{q}",
            question=f"What about topic1x{q % turns + 1}?",
            answer=f"GOLD{sample_id}ANSWER{q}",
            category=Category.from_locomo_code(codes[q % 5]),
            evidence=(f"D1:{q % turns + 1}",),
            evidence_turns=(f"D1:{q % turns + 1}",),
            adversarial=codes[q % 5] == 5,
        )
        for q in range(questions)
    ]
    return Sample(
        sample_id=sample_id,
        dataset="locomo",
        sessions=built,
        qa_pairs=qa,
        speakers=("Ann", "Bob"),
        metadata={"event_summary": f"GOLDMETA{sample_id}"},
    )


def make_result(**fields: Any) -> EvalResult:
    """An answered single-hop LoCoMo result whose context holds its one evidence turn
    ("Where did Ann go?", gold and prediction "Paris"); ``fields`` replace any field."""
    base = EvalResult(
        sample_id="s",
        question_id="q",
        dataset="locomo",
        category=Category.SINGLE_HOP,
        question="Where did Ann go?",
        answer="Paris",
        adversarial=False,
        evidence_turns=("D1:1",),
        evidence_texts=("Ann: I went to  Paris",),
        context="[8 May] Ann: I went to Paris\n",
        ranked_turn_ids=None,
        retrieval_latency_s=0.0,
        prediction="Paris",
    )
    return dataclasses.replace(base, **fields)

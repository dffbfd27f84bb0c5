"""The question-answering agent: a memory, a prompt and a language model."""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from typing_extensions import Self

from himga._errors import HimgaError
from himga.data.schema import Sample
from himga.llm._protocol import ChatMessage, LLMClient
from himga.memory._protocol import BaseMemory

__all__ = ["PROMPT_TEMPLATES", "Answer", "BaseAgent", "NoLLMError", "prompt_hashes"]

# LoCoMo's QA instruction (snap-research/locomo, "QA_PROMPT"), preceded by the
# retrieved context, which reference memories write one turn per line with its
# session date and speaker. LoCoMo prompts its adversarial category differently;
# the agent never learns a question's category, so every prompt says how to
# abstain, in the words the official category-5 score looks for.
_ANSWER_WITH_CONTEXT = (
    "Below is what you remember of earlier conversations; each line may carry the date "
    "of its conversation session.\n\n{context}\n\n{date_line}"
    "Based on the above context, write an answer in the form of a short phrase for the "
    "following question. Answer with exact words from the context whenever possible. "
    "If the context does not contain the answer, answer: Not mentioned in the conversation."
    "\n\nQuestion: {question} Short answer:"
)
_ANSWER_WITHOUT_CONTEXT = (
    "{date_line}Write an answer in the form of a short phrase for the following question. "
    "If you do not know the answer, answer: Not mentioned in the conversation.\n\n"
    "Question: {question} Short answer:"
)
_DATE_LINE = "Current date: {date}\n\n"

PROMPT_TEMPLATES: Mapping[str, str] = MappingProxyType(
    {
        "answer_with_context": _ANSWER_WITH_CONTEXT,
        "answer_without_context": _ANSWER_WITHOUT_CONTEXT,
        "date_line": _DATE_LINE,
    }
)


def prompt_hashes() -> dict[str, str]:
    """SHA-256 (hex) of every answer prompt template, by name, for run manifests."""
    return {
        name: hashlib.sha256(template.encode("utf-8")).hexdigest()
        for name, template in PROMPT_TEMPLATES.items()
    }


class NoLLMError(HimgaError, RuntimeError):
    """An answer was requested from an agent built without a language model."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer with what produced it: the context, token usage and LLM latency."""

    text: str
    context: str
    input_tokens: int
    output_tokens: int
    latency_s: float
    model: str


class BaseAgent:
    """Answers questions about a conversation from what its memory retrieves.

    ``ingest_sample`` feeds the memory every message of a sample with its
    session, in order -- only :class:`~himga.data.Message` and
    :class:`~himga.data.Session` objects, never the sample's questions, answers,
    evidence or metadata. ``answer`` retrieves context for the question text,
    builds the prompt (:meth:`build_prompt`) and asks the LLM for a short answer.

    The prompt has a context section only when the memory returned non-blank
    text, and a ``Current date`` line when the date is known: the sample's
    ``question_date`` (LongMemEval), else the raw date of its last session
    (LoCoMo questions are asked after the last session).
    """

    def __init__(
        self, memory: BaseMemory, llm: LLMClient | None = None, *, max_tokens: int = 128
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        self._memory = memory
        self._llm = llm
        self._max_tokens = max_tokens
        self._current_date: str | None = None

    @property
    def memory(self) -> BaseMemory:
        """The memory the agent ingests into and retrieves from."""
        return self._memory

    @property
    def llm(self) -> LLMClient | None:
        """The language model, ``None`` for a retrieval-only agent."""
        return self._llm

    @property
    def max_tokens(self) -> int:
        """The reply budget of each answer call."""
        return self._max_tokens

    def with_memory(self, memory: BaseMemory) -> Self:
        """A shallow copy of this agent that uses ``memory`` instead (the evaluation
        wraps the memory in its error guard this way, keeping the agent's class)."""
        clone = copy.copy(self)
        clone._memory = memory
        return clone

    @property
    def current_date(self) -> str | None:
        """The date the prompt states, set by :meth:`ingest_sample`."""
        return self._current_date

    def ingest_sample(self, sample: Sample) -> None:
        """Ingest every message of ``sample`` with its session, in conversation order.

        Does not reset the memory: the caller decides when a new conversation starts.
        """
        last_date: str | None = None
        for session, message in sample.iter_turns():
            self._memory.ingest(message, session)
            last_date = session.date_str or last_date
        self._current_date = sample.question_date or last_date

    def retrieve(self, question: str) -> str:
        """The memory's context for ``question``."""
        return self._memory.retrieve(question)

    def build_prompt(self, question: str, context: str) -> list[ChatMessage]:
        """The chat messages that ask the LLM to answer ``question`` from ``context``."""
        date_line = _DATE_LINE.format(date=self._current_date) if self._current_date else ""
        if context.strip():
            content = _ANSWER_WITH_CONTEXT.format(
                context=context.strip(), date_line=date_line, question=question
            )
        else:
            content = _ANSWER_WITHOUT_CONTEXT.format(date_line=date_line, question=question)
        return [{"role": "user", "content": content}]

    def _require_llm(self) -> LLMClient:
        if self._llm is None:
            raise NoLLMError("this BaseAgent has no llm; pass llm=get_client(...) to answer")
        return self._llm

    def answer(self, question: str) -> str:
        """Retrieve, prompt and return the LLM's short answer to ``question`` (blocking)."""
        llm = self._require_llm()
        prompt = self.build_prompt(question, self.retrieve(question))
        return llm.chat(prompt, max_tokens=self._max_tokens).strip()

    async def aanswer(self, question: str, *, context: str | None = None) -> Answer:
        """The answer to ``question`` with its usage, for concurrent use.

        ``context`` is an already retrieved context; when ``None`` the memory is
        asked here.
        """
        if context is None:
            context = self.retrieve(question)
        return await self.acomplete(self.build_prompt(question, context), context=context)

    async def acomplete(self, prompt: Sequence[ChatMessage], *, context: str) -> Answer:
        """Send a prompt made by :meth:`build_prompt` from ``context``; the answer and usage.

        The evaluation builds each prompt right after retrieving, while the
        agent's state (the current date) is that of the question's sample, and
        sends it later, concurrently with the next sample's ingestion.
        """
        llm = self._require_llm()
        started = time.perf_counter()
        completion = await llm.achat(prompt, max_tokens=self._max_tokens)
        return Answer(
            text=completion.text.strip(),
            context=context,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            latency_s=time.perf_counter() - started,
            model=completion.model,
        )

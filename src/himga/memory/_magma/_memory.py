"""``MagmaMemory`` (``magma``) and ``MagmaPaperMemory`` (``magma-paper``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar

from himga.data.schema import Message, Session
from himga.llm._protocol import LLMClient
from himga.memory._embedder import as_embedder
from himga.memory._magma._build import BuildStats, LLMBuilder, TurnInput
from himga.memory._magma._extract import Event, offline_event
from himga.memory._magma._graph import Edge, Graph, Node, build_graph
from himga.memory._magma._retrieve import (
    PARAMETERS,
    Index,
    QueryType,
    beam_search,
    classify_intent,
    classify_query,
    expand_partners,
    format_context,
    fused_candidates,
    rerank,
    traverse,
)
from himga.memory._magma._vectors import VectorSpace, numpy
from himga.memory._protocol import Hit

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from himga.embed import Embedder

__all__ = ["MagmaMemory", "MagmaPaperMemory"]

#: What ranking a query yields: the index (None when empty), ranked nodes, query type.
_Ranking = tuple["Index | None", list[tuple[int, float]], QueryType]


class MagmaMemory:
    """MAGMA's multi-graph memory as released, with its evaluation leaks removed.

    One event node per turn; typed links (temporal, context, similar-to,
    response-to, answered-by, same-entity, temporally-close, belongs-to-session:
    see :mod:`himga.memory._magma._graph`); retrieval by query type, fused
    candidates, adaptive graph traversal, re-rank and question/answer expansion,
    returned as a "key facts" context of the best ``top_k`` turns.

    Without ``llm`` every event is extracted by rules (``magma`` offline). With
    an :class:`~himga.llm.LLMClient` each turn costs two requests (an event
    extraction and a narrative extraction) and, if ``session_summaries``, each
    session one more for its summary node -- never the dataset's own summaries.
    ``himga eval --llm ...`` hands its client over through :meth:`attach_llm`.

    ``ingest`` only buffers (O(1)); the first ``retrieve`` or ``search`` after new
    ingests builds the pending turns, their LLM requests issued concurrently, at
    most ``concurrency`` (default: the client's ``max_concurrency``) in flight.
    Malformed replies are corrected or degraded to the rules, and counted in
    :attr:`build_stats`. ``embedder`` (an :class:`~himga.embed.Embedder` or a spec
    for :func:`~himga.embed.get_embedder`) replaces the default TF-IDF vectors.
    Needs the ``magma`` extra (numpy).
    """

    NEEDS: ClassVar[str] = "an LLM (himga eval --llm) to build its graph"
    COLD_START: ClassVar[str] = "one LLM call per turn, cached per run"

    #: The paper's slow path (causal links by LLM, beam-search retrieval) is off here.
    paper = False

    def __init__(
        self,
        llm: LLMClient | None = None,
        *,
        top_k: int = 15,
        session_summaries: bool = True,
        concurrency: int | None = None,
        max_attempts: int = 3,
        embedder: Embedder | str | None = None,
    ) -> None:
        name = type(self).__name__
        if top_k < 1:
            raise ValueError(f"{name}: top_k must be >= 1, got {top_k}")
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"{name}: concurrency must be >= 1, got {concurrency}")
        if max_attempts < 1:
            raise ValueError(f"{name}: max_attempts must be >= 1, got {max_attempts}")
        self.llm = llm
        self.top_k = top_k
        self.session_summaries = session_summaries
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self._np = numpy()
        self._space = VectorSpace(as_embedder(embedder))
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        llm = None if self.llm is None else f"{self.llm.provider}:{self.llm.model}"
        return (
            f"{type(self).__name__}(llm={llm!r}, vectors={self._space.name!r}, "
            f"top_k={self.top_k}, session_summaries={self.session_summaries}, "
            f"concurrency={self.concurrency}, max_attempts={self.max_attempts})"
        )

    def attach_llm(self, llm: LLMClient) -> None:
        """Build later turns with ``llm`` (what ``himga eval --llm`` calls before ingesting)."""
        self.llm = llm

    # -- the memory protocol ---------------------------------------------------------------

    def ingest(self, message: Message, session: Session, /) -> None:
        """Buffer the turn (O(1)); it is built at the next ``retrieve`` or ``search``."""
        self._pending.append((message, session))

    def retrieve(self, query: str, /) -> str:
        """The "key facts" context of the best ``top_k`` turns; ``""`` when none matches."""
        index, ranked, query_type = self._rank(query)
        if index is None:
            return ""
        chosen = [node for node, _ in ranked[: self.top_k]]
        return format_context(index, query, chosen, query_type)

    def search(self, query: str, k: int, /) -> list[Hit]:
        """At most ``k`` turns in retrieval order, with their scores (non-increasing)."""
        index, ranked, _ = self._rank(query)
        if index is None or k < 1:
            return []
        return [
            Hit(index.nodes[node].turn_id, score, index.nodes[node].line)
            for node, score in ranked[:k]
        ]

    def reset(self) -> None:
        """Forget every turn, the graph and the build counters (not the LLM or settings)."""
        self._pending: list[tuple[Message, Session]] = []
        self._nodes: list[Node] = []
        self._sessions: dict[str, int] = {}  # session id -> position
        self._session_turns: dict[int, list[str]] = {}
        self._session_dates: dict[int, str | None] = {}
        self._summaries: dict[int, str] = {}
        self._causal: list[Edge] = []
        self._index: Index | None = None
        self._last_ranked: tuple[str, _Ranking] | None = None
        self._space.reset()
        self.build_stats = BuildStats()

    # -- building --------------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The graph of everything ingested (built now if turns are pending)."""
        self._ensure_built()
        return self._index.graph if self._index is not None else Graph()

    @property
    def nodes(self) -> Sequence[Node]:
        """The event nodes of everything ingested, in conversation order."""
        self._ensure_built()
        return tuple(self._nodes)

    def _ensure_built(self) -> None:
        if self._pending:
            started = time.perf_counter()
            self._build()
            self.build_stats.build_seconds += time.perf_counter() - started

    def _builder(self) -> LLMBuilder | None:
        if self.llm is None:
            return None
        concurrency = self.concurrency or self.llm.max_concurrency
        return LLMBuilder(self.llm, concurrency, self.max_attempts, self.build_stats)

    def _build(self) -> None:
        pending, self._pending = self._pending, []
        turns: list[TurnInput] = []
        placed: list[tuple[Message, Session, int, int]] = []
        for k, (message, session) in enumerate(pending):
            position = self._sessions.setdefault(session.session_id, len(self._sessions))
            lines = self._session_turns.setdefault(position, [])
            lines.append(f"{message.role}: {message.content}")
            self._session_dates[position] = session.date_str
            placed.append((message, session, position, len(lines)))
            previous = pending[k - 1][0] if k else None
            following = pending[k + 1][0] if k + 1 < len(pending) else None
            turns.append(
                TurnInput(
                    message.role,
                    message.content,
                    session.date_str,
                    session.date,
                    None if previous is None else f"{previous.role}: {previous.content}",
                    None if following is None else f"{following.role}: {following.content}",
                )
            )
        touched = list(dict.fromkeys(position for _, _, position, _ in placed))
        builder = self._builder()
        events: list[Event]
        if builder is None:
            events = [offline_event(t.text, t.speaker, t.anchor) for t in turns]
        else:
            summarised = touched if self.session_summaries else []
            sessions = [(self._session_dates[p], self._session_turns[p]) for p in summarised]
            events, summaries = builder.build(turns, sessions)
            for position, summary in zip(summarised, summaries, strict=True):
                if summary is not None:
                    self._summaries[position] = summary
        self.build_stats.turns += len(turns)
        for (message, session, position, number), event in zip(placed, events, strict=True):
            # The released code stamps turn n of a session n hours after the session
            # start; temporally-close links (<= 24 h) depend on it.
            stamp = None if session.date is None else session.date + timedelta(hours=number)
            self._nodes.append(
                Node(
                    message.turn_id,
                    message.role,
                    message.content,
                    position,
                    session.date_str,
                    stamp,
                    event,
                )
            )
        self._last_ranked = None
        self._index = self._new_index()
        if builder is not None and self.paper:
            first_new = len(self._nodes) - len(events)
            self._infer_causal_links(builder, range(first_new, len(self._nodes)))
            self._index = self._new_index()

    def _new_index(self) -> Index:
        texts = [node.indexed_text for node in self._nodes]
        positions = sorted(self._summaries)
        vectors = self._space.fit(texts + [self._summaries[p] for p in positions])
        node_vectors: NDArray[np.float32] = vectors[: len(texts)]
        sessions = {
            p: (self._summaries[p], vectors[len(texts) + k]) for k, p in enumerate(positions)
        }
        graph = build_graph(self._nodes, node_vectors)
        for edge in self._causal:
            graph.add(edge)
        return Index(self._nodes, node_vectors, graph, sessions, self._np)

    def _infer_causal_links(self, builder: LLMBuilder, new: range) -> None:
        """The paper's slow path: one request per new node over its 2-hop neighbourhood."""
        assert self._index is not None
        graph = self._index.graph
        requests = []
        for i in new:
            near: dict[int, float] = {}
            for j, _, weight in graph.neighbours[i]:
                near[j] = max(near.get(j, 0.0), weight)
            for j in list(near):
                for h, _, weight in graph.neighbours[j]:
                    if h != i and h not in near:
                        near[h] = weight / 2
            chosen = sorted((j for j in near if j != i), key=lambda j: (-near[j], j))
            neighbours = [(j, self._nodes[j].line) for j in chosen[:5]]
            requests.append((self._nodes[i].line, neighbours))
        for i, links in zip(new, builder.causal_links(requests), strict=True):
            for j, relation, confidence in links:
                self._causal.append(Edge("causal", i, j, confidence, relation))
        self.build_stats.causal_links = len(self._causal)

    # -- ranking ---------------------------------------------------------------------------

    def _rank(self, query: str) -> _Ranking:
        """The index, the ranked nodes and the query type; ``retrieve`` then ``search`` of one
        question (what the evaluation does) rank it once."""
        self._ensure_built()
        if self._last_ranked is not None and self._last_ranked[0] == query:
            return self._last_ranked[1]
        ranked = self._rank_now(query)
        self._last_ranked = (query, ranked)
        return ranked

    def _rank_now(self, query: str) -> _Ranking:
        index = self._index
        query_type = classify_query(query)
        if index is None or not index.nodes:
            return None, [], query_type
        params = PARAMETERS[query_type]
        query_vector = self._space.query(query)
        candidates = fused_candidates(index, query, query_vector, params)
        if not candidates:
            return None, [], query_type
        anchors = sorted(candidates, key=lambda i: (-candidates[i], i))[: params.anchors]
        if self.paper:
            found = beam_search(
                index, query_vector, {a: candidates[a] for a in anchors}, classify_intent(query)
            )
            beam = {node for node, _ in found}
            floor = min((score for _, score in found), default=0.0)
            rest = sorted(
                ((i, min(floor, s)) for i, s in candidates.items() if i not in beam),
                key=lambda item: (-candidates[item[0]], item[0]),
            )
            ranked = found + rest
        else:
            pool = dict(candidates)
            for node, similarity in traverse(index, query, query_vector, anchors, params).items():
                pool.setdefault(node, similarity)
            ranked = rerank(index, query, pool, query_type, params, self.top_k)
        return index, expand_partners(index, ranked), query_type


class MagmaPaperMemory(MagmaMemory):
    """``magma`` plus the paper's slow path and retrieval.

    With an LLM, each node costs one more request: its 2-hop neighbourhood (the 5
    nearest nodes) is shown to the model, which names causal relations
    (leads-to, because-of, enables, prevents) that become ``causal`` links.
    Retrieval replaces the adaptive traversal and re-rank by the intent-weighted
    beam search (intent why / when / entity; beam 10, 50 nodes visited).
    """

    paper = True

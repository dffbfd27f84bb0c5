"""MAGMA's multi-graph: one event node per turn, typed links built without an LLM.

The link rules are those of the released code (``memory_builder.batch_create_links``),
applied to every event node of the conversation in order:

======================  ===========================================================
``precedes``            turn i -> turn i+1 (weight 1)
``succeeds``            turn i+1 -> turn i (weight 1)
``context``             i -> j for 1 <= |i-j| <= 3, weight 1 / (1 + 0.5 |i-j|)
``similar``             i -> its 3 most similar other turns with cosine > 0.5 (weight cosine)
``response_to``         i -> i+1 when their speakers differ (weight 0.8)
``answered_by``         i -> i+1 when turn i is a question (0.85; 0.7 same speaker)
``same_entity``         a turn -> each of the next 4 turns naming one of its entities (0.9)
``temporally_close``    i -> each of the next 9 turns within 24 h, weight 1 / (1 + hours)
``belongs_to_session``  turn -> its session node (weight 1)
``causal``              (``magma-paper`` only) inferred by an LLM over a 2-hop neighbourhood
======================  ===========================================================
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, get_args

from himga.memory._magma._extract import Event

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["EDGE_KINDS", "Edge", "EdgeKind", "Graph", "Node", "build_graph", "is_question"]

EdgeKind = Literal[
    "precedes",
    "succeeds",
    "context",
    "similar",
    "response_to",
    "answered_by",
    "same_entity",
    "temporally_close",
    "belongs_to_session",
    "causal",
]
# Derived, so the Literal and the tuple cannot drift apart.
EDGE_KINDS: tuple[EdgeKind, ...] = get_args(EdgeKind)

CONTEXT_WINDOW = 3
SIMILAR_TOP = 3
SIMILAR_MIN_COSINE = 0.5
ENTITY_NEXT = 4
CLOSE_NEXT = 9
CLOSE_HOURS = 24.0

_QUESTION_OPENERS = re.compile(
    r"^\W*(what|when|where|who|whom|whose|why|how|which|is|are|was|were|do|does|did|can|"
    r"could|would|should|will|have|has|any)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Node:
    """One turn as an event node: where and when it was said, and its extracted event."""

    turn_id: str | None
    speaker: str
    text: str
    session: int  # position of its session in the conversation
    session_date: str | None
    timestamp: datetime | None
    event: Event

    @property
    def line(self) -> str:
        """``"[<session date>] <speaker>: <text>"``, as the reference memories print a turn."""
        prefix = f"[{self.session_date}] " if self.session_date else ""
        return f"{prefix}{self.speaker}: {self.text}"

    @property
    def indexed_text(self) -> str:
        """The keyword-enriched text that is embedded and keyword-indexed."""
        event = self.event
        parts = [f"{self.speaker}: {self.text}", event.narrative, event.summary, event.topic]
        parts += [*event.facts, " ".join(event.keywords), " ".join(event.entities)]
        return "\n".join(part for part in parts if part)


@dataclass(frozen=True, slots=True)
class Edge:
    """A directed link ``source -> target`` (event positions; a session position for
    ``belongs_to_session``), with its weight and, for ``causal``, its relation."""

    kind: EdgeKind
    source: int
    target: int
    weight: float
    relation: str = ""


@dataclass(slots=True)
class Graph:
    """The edges, and per event node its event neighbours in both directions."""

    edges: list[Edge] = field(default_factory=list)
    neighbours: list[list[tuple[int, EdgeKind, float]]] = field(default_factory=list)

    def add(self, edge: Edge) -> None:
        """Record ``edge``; event-to-event edges are traversable from both ends."""
        self.edges.append(edge)
        if edge.kind != "belongs_to_session":
            self.neighbours[edge.source].append((edge.target, edge.kind, edge.weight))
            self.neighbours[edge.target].append((edge.source, edge.kind, edge.weight))


def is_question(text: str) -> bool:
    """A turn asks something: it has a question mark or opens with a question word."""
    return "?" in text or _QUESTION_OPENERS.match(text) is not None


def _entity_key(entity: str) -> str:
    return " ".join(entity.casefold().split())


def build_graph(nodes: Sequence[Node], vectors: NDArray[np.float32]) -> Graph:
    """Every non-LLM link between ``nodes`` (in conversation order); ``vectors`` row-normalised."""
    n = len(nodes)
    graph = Graph(neighbours=[[] for _ in range(n)])
    for i in range(n - 1):
        graph.add(Edge("precedes", i, i + 1, 1.0))
        graph.add(Edge("succeeds", i + 1, i, 1.0))
    for i in range(n):
        for j in range(max(0, i - CONTEXT_WINDOW), min(n, i + CONTEXT_WINDOW + 1)):
            if j != i:
                graph.add(Edge("context", i, j, 1.0 / (1.0 + 0.5 * abs(i - j))))
    if n > 1:
        similarity = vectors @ vectors.T
        for i in range(n):
            row = similarity[i]
            row[i] = -1.0
            # the SIMILAR_TOP best by cosine, ties to the earlier turn
            for j in (-row).argsort(kind="stable")[:SIMILAR_TOP].tolist():
                if float(row[j]) > SIMILAR_MIN_COSINE:
                    graph.add(Edge("similar", i, j, float(row[j])))
    for i in range(n - 1):
        here, there = nodes[i], nodes[i + 1]
        if here.speaker != there.speaker:
            graph.add(Edge("response_to", i, i + 1, 0.8))
        if is_question(here.text):
            graph.add(Edge("answered_by", i, i + 1, 0.85 if here.speaker != there.speaker else 0.7))
    mentions: defaultdict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(nodes):
        for key in dict.fromkeys(_entity_key(e) for e in node.event.entities):
            if key:
                mentions[key].append(i)
    linked: set[tuple[int, int]] = set()
    for positions in mentions.values():
        for a, i in enumerate(positions):
            for j in positions[a + 1 : a + 1 + ENTITY_NEXT]:
                if (i, j) not in linked:
                    linked.add((i, j))
                    graph.add(Edge("same_entity", i, j, 0.9))
    for i in range(n):
        start = nodes[i].timestamp
        if start is None:
            continue
        for j in range(i + 1, min(n, i + 1 + CLOSE_NEXT)):
            end = nodes[j].timestamp
            if end is None:
                continue
            hours = abs((end - start).total_seconds()) / 3600
            if hours <= CLOSE_HOURS:
                graph.add(Edge("temporally_close", i, j, 1.0 / (1.0 + hours)))
    for i, node in enumerate(nodes):
        graph.add(Edge("belongs_to_session", i, node.session, 1.0))
    return graph

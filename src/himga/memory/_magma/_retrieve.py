"""MAGMA retrieval without an LLM: query type, fused candidates, graph traversal, re-rank.

The stages and their constants follow the released ``query_engine.query``:

1. a rule-based query-type classifier picks per-type parameters (:data:`PARAMETERS`);
2. candidates from vector, keyword-index and substring search, fused by reciprocal
   rank fusion (k = 60), a candidate's score being ``min(1, 20 * rrf)``;
3. adaptive breadth-first traversal from the best 15 candidates (30 for multi-hop),
   keeping a node while its cosine with the query is above the type's threshold and
   at most 0.15 below its parent's;
4. a hand-weighted re-rank (keywords, phrases, entities, dates, similarity);
5. question/answer partners placed after the node they answer or ask.

``magma-paper`` replaces stages 3-4 by the paper's intent-weighted beam search.
Everything here is computed from the question text alone: never its gold category.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from himga.memory._magma._graph import EdgeKind, Graph, Node
from himga.memory._text import ENGLISH_MONTHS, ENGLISH_STOPWORDS, words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "PARAMETERS",
    "Index",
    "QueryType",
    "beam_search",
    "classify_intent",
    "classify_query",
    "expand_partners",
    "format_context",
    "fused_candidates",
    "rerank",
    "traverse",
]

QueryType = Literal[
    "multi_hop",
    "temporal",
    "activity",
    "entity",
    "causal",
    "location",
    "open_domain",
    "factual",
    "general",
]
LinkClass = Literal["temporal", "semantic", "causal", "entity"]

LINK_CLASS: Mapping[EdgeKind, LinkClass] = {
    "precedes": "temporal",
    "succeeds": "temporal",
    "temporally_close": "temporal",
    "context": "semantic",
    "similar": "semantic",
    "belongs_to_session": "semantic",
    "same_entity": "entity",
    "response_to": "causal",
    "answered_by": "causal",
    "causal": "causal",
}

RRF_K = 60
MAX_DROP = 0.15
MAX_TRAVERSED = 800
MAX_SIMILARITY_CHECKS = 400
SESSION_BOOST = 0.3


@dataclass(frozen=True, slots=True)
class Parameters:
    """What a query type changes: traversal depth, links followed, threshold, weights, sizes."""

    max_depth: int
    follow: frozenset[LinkClass] | None  # None: every link class
    threshold: float
    weights: Mapping[str, float]
    anchors: int = 15
    list_sizes: tuple[int, int, int] = (20, 20, 25)  # vector, keyword, substring


def _weights(
    keyword: float, entity: float, temporal: float, phrase: float, similarity: float, **extra: float
) -> dict[str, float]:
    return {
        "keyword": keyword,
        "entity": entity,
        "temporal": temporal,
        "phrase": phrase,
        "similarity": similarity,
        **extra,
    }


# The released per-type table (query_engine.get_adaptive_params).
PARAMETERS: Mapping[QueryType, Parameters] = {
    "temporal": Parameters(
        5,
        frozenset({"temporal"}),
        0.25,
        _weights(2.0, 3.0, 4.0, 3.5, 1.2, date_exact=10.0),
        list_sizes=(15, 15, 20),
    ),
    "entity": Parameters(
        4, frozenset({"semantic", "entity"}), 0.3, _weights(1.8, 3.5, 1.0, 2.5, 1.3)
    ),
    "multi_hop": Parameters(
        12,
        frozenset({"semantic", "entity", "causal", "temporal"}),
        0.10,
        _weights(5.0, 6.0, 1.5, 5.0, 2.0),
        anchors=30,
        list_sizes=(30, 30, 40),
    ),
    "activity": Parameters(
        4, frozenset({"causal", "temporal"}), 0.28, _weights(2.0, 2.5, 1.5, 3.0, 1.4)
    ),
    "causal": Parameters(5, frozenset({"causal"}), 0.25, _weights(2.0, 2.0, 0.5, 3.5, 1.5)),
    "factual": Parameters(
        5, frozenset({"semantic", "entity"}), 0.25, _weights(5.0, 4.0, 1.0, 5.0, 1.5)
    ),
    "general": Parameters(4, None, 0.3, _weights(4.0, 2.5, 1.5, 5.0, 1.0)),
    "open_domain": Parameters(
        6, frozenset({"semantic", "entity"}), 0.10, _weights(2.0, 3.0, 0.5, 3.0, 2.0)
    ),
    "location": Parameters(4, None, 0.3, _weights(4.0, 2.5, 1.5, 5.0, 1.0)),
}


def _has(text: str, *patterns: str) -> bool:
    return any(re.search(p, text) for p in patterns)


def classify_query(question: str) -> QueryType:
    """The query type, from the wording of ``question`` only (the released rules, in order)."""
    q = question.casefold()
    tokens = set(words(q))
    wh = bool(tokens & {"who", "what", "where"})
    if (
        _has(
            q,
            r"\bwhat\b.*\b(research|stud|investigat|explor|activit|participat|involv|career|"
            r"pursu|field)",
            r"\bwhat is\b.*\bidentity",
            r"\bwho is\b.*\breally\b",
            r"\bwhere\b.*\b(move|come|came|moved) from\b",
            r"relationship",
            r"\bbetween\b",
            r"\bboth\b",
            r"\bcommon\b",
            r"\bidentity\b",
            r"\bbackground\b",
            r"\bstatus\b",
            r"\bparticipat",
            r"\binvolved\b",
            r"\bactivities\b",
            r"\bevents\b",
            r"\boffer",
            r"\bprovide",
        )
        or ("and" in tokens and wh)
        or q.count("who") > 1
        or ("all" in tokens and wh)
        or ("'s" in q and bool(tokens & {"what", "where", "which", "how"}))
        or ("how did" in q and _has(q, r"promot|achiev|accomplish|develop"))
        or ("from" in tokens and bool(tokens & {"move", "moved", "come", "came", "travel"}))
    ):
        return "multi_hop"
    if _has(q, r"\bwhen (did|was|is)\b", r"\bwhat (date|time|year|month)\b", r"\bhow long\b"):
        return "temporal"
    if "what" in tokens and tokens & {"did", "does", "do", "doing", "done"} and "prefer" not in q:
        return "activity"
    if tokens & {"who", "whom", "whose"}:
        return "entity"
    if ("what day" in q and tokens & {"was", "is", "did"}) or (
        "ago" in tokens and _has(q, r"\b(year|month|week|day)s?\b")
    ):
        return "temporal"
    if tokens & {"why", "because", "cause", "reason"} or "how come" in q:
        return "causal"
    if tokens & {"where", "location", "place"}:
        return "location"
    if _has(
        q,
        r"\bwhat (fields|areas)\b",
        r"\bwould likely\b",
        r"\bmight be\b",
        r"\bcould be\b",
        r"\binterested in\b",
        r"\bpursue\b",
        r"\bcareer\b",
        r"\bfuture\b",
    ) or ("education" in tokens and "field" in tokens):
        return "open_domain"
    if tokens & {"what", "which"} or "how many" in q or "how much" in q:
        return "factual"
    return "general"


Intent = Literal["why", "when", "entity"]

# The paper's intent-specific attention over link classes (Equation 6 of the released code).
INTENT_WEIGHTS: Mapping[Intent, Mapping[LinkClass, float]] = {
    "why": {"causal": 0.7, "temporal": 0.2, "semantic": 0.05, "entity": 0.05},
    "when": {"temporal": 0.7, "causal": 0.1, "semantic": 0.1, "entity": 0.1},
    "entity": {"entity": 0.6, "semantic": 0.3, "temporal": 0.05, "causal": 0.05},
}


def classify_intent(question: str) -> Intent:
    """The paper's three intents: why (causal), when (temporal), else entity."""
    tokens = set(words(question))
    q = question.casefold()
    if tokens & {"why", "because", "cause", "reason", "result"} or "lead to" in q:
        return "why"
    if tokens & {"when", "time", "date", "before", "after", "during", "while"}:
        return "when"
    return "entity"


def query_keywords(question: str) -> list[str]:
    """Content words of the question, in order, 3+ characters."""
    return list(
        dict.fromkeys(w for w in words(question) if len(w) > 2 and w not in ENGLISH_STOPWORDS)
    )


def _index_terms(text: str) -> list[str]:
    tokens = [t.strip(".,!?;:\"'()[]") for t in text.casefold().split()]
    tokens = [t for t in tokens if t]
    return [t for t in tokens if len(t) >= 2] + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


class Index:
    """The searchable state of a built conversation: texts, vectors, keyword index, graph."""

    def __init__(
        self,
        nodes: Sequence[Node],
        vectors: NDArray[np.float32],
        graph: Graph,
        sessions: Mapping[int, tuple[str, NDArray[np.float32]]],
        np_module: Any,
    ) -> None:
        self.nodes = nodes
        self.vectors = vectors
        self.graph = graph
        self.sessions = sessions  # session position -> (summary, vector)
        self.np = np_module
        self.texts = [node.indexed_text.casefold() for node in nodes]
        self.originals = [f"{node.speaker}: {node.text}".casefold() for node in nodes]
        postings: defaultdict[str, list[int]] = defaultdict(list)
        for i, text in enumerate(self.texts):
            for term in dict.fromkeys(_index_terms(text)):
                postings[term].append(i)
        self.postings = dict(postings)
        self.session_members: defaultdict[int, list[int]] = defaultdict(list)
        for i, node in enumerate(nodes):
            self.session_members[node.session].append(i)


def _ranked(scores: Mapping[int, float], size: int) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:size]]


def keyword_search(index: Index, question: str) -> dict[int, float]:
    """The released keyword-index score: matched index terms (5 each), words and phrases in text."""
    raw = [t.strip(".,!?;:\"'()[]-") for t in question.casefold().split()]
    raw = [t for t in raw if t]
    asked = [t for t in raw if t not in ENGLISH_STOPWORDS]
    matched: defaultdict[int, int] = defaultdict(int)
    for word in asked:
        if len(word) >= 2:
            for i in index.postings.get(word, ())[:20]:
                matched[i] += 1
        if len(word) >= 4:
            for term, nodes in index.postings.items():
                if " " not in term and (word in term or term in word) and term != word:
                    for i in nodes[:5]:
                        matched[i] += 1
    bigrams = [f"{a} {b}" for a, b in itertools.pairwise(raw)]
    for bigram in bigrams:
        for i in index.postings.get(bigram, ())[:15]:
            matched[i] += 1
    scores: dict[int, float] = {}
    for i, count in matched.items():
        text = index.texts[i]
        score = 5.0 * count + sum(1 for w in asked if w in text)
        scores[i] = score + 3.0 * sum(1 for b in bigrams if b in text)
    return scores


def substring_search(index: Index, question: str) -> dict[int, float]:
    """How many question words occur in each node's text and in its original turn."""
    asked = [w for w in words(question) if len(w) > 2 and w not in ENGLISH_STOPWORDS]
    scores: dict[int, float] = {}
    for i, (text, original) in enumerate(zip(index.texts, index.originals, strict=True)):
        score = sum(1 for w in asked if w in text) + sum(1 for w in asked if w in original)
        if score:
            scores[i] = float(score)
    return scores


def fused_candidates(
    index: Index, question: str, query_vector: NDArray[np.float32], params: Parameters
) -> dict[int, float]:
    """Event node -> candidate score, from the three searches fused by RRF (sessions boost)."""
    vector_size, keyword_size, scan_size = params.list_sizes
    n = len(index.nodes)
    similarity: list[float] = (index.vectors @ query_vector).tolist() if n else []
    vector_scores = {i: s for i, s in enumerate(similarity) if s > 0}
    for position, (_, vector) in index.sessions.items():
        cosine = float(vector @ query_vector)
        if cosine > 0:
            vector_scores[n + position] = cosine  # session nodes are candidates too
    lists = [
        _ranked(vector_scores, vector_size),
        _ranked(keyword_search(index, question), keyword_size),
        _ranked(substring_search(index, question), scan_size),
    ]
    fused: defaultdict[int, float] = defaultdict(float)
    for ranking in lists:
        for rank, key in enumerate(ranking):
            fused[key] += 1.0 / (RRF_K + rank + 1)
    scores = {key: min(1.0, 20.0 * value) for key, value in fused.items()}
    events = {key: score for key, score in scores.items() if key < n}
    for key, score in scores.items():
        if key >= n:
            for i in index.session_members.get(key - n, ()):
                if i in events:
                    events[i] += SESSION_BOOST * score
    return events


_NEIGHBOUR_ORDER = {"same_entity": 0, "context": 1}


def _neighbours(index: Index, node: int, follow: frozenset[LinkClass] | None) -> list[int]:
    """Distinct neighbours: context links always, others if their class is followed;
    same-entity neighbours first, then context, then the rest (the released priority)."""
    best: dict[int, int] = {}
    for other, kind, _ in index.graph.neighbours[node]:
        if kind != "context" and follow is not None and LINK_CLASS[kind] not in follow:
            continue
        rank = _NEIGHBOUR_ORDER.get(kind, 2)
        if other != node and rank < best.get(other, 3):
            best[other] = rank
    return sorted(best, key=lambda other: (best[other], other))


def traverse(
    index: Index,
    question: str,
    query_vector: NDArray[np.float32],
    anchors: Sequence[int],
    params: Parameters,
) -> dict[int, float]:
    """Adaptive BFS from ``anchors``: node -> cosine with the query, for the nodes kept."""
    keywords = query_keywords(question)
    cosine = index.vectors @ query_vector
    queue = [(a, float(cosine[a]), 0, float(cosine[a])) for a in anchors]
    checks = len(anchors)
    visited: set[int] = set()
    kept: dict[int, float] = {}
    limit = 10 if len(keywords) > 3 else 8
    head = 0
    while head < len(queue) and len(kept) < MAX_TRAVERSED:
        node, sim, depth, parent_sim = queue[head]
        head += 1
        if node in visited:
            continue
        visited.add(node)
        if sim < params.threshold or parent_sim - sim > MAX_DROP:
            continue
        kept[node] = sim
        if depth >= params.max_depth:
            continue
        promising = [
            other
            for other in _neighbours(index, node, params.follow)
            if other not in visited and any(k in index.texts[other] for k in keywords)
        ]
        for other in promising[:limit]:
            if checks >= MAX_SIMILARITY_CHECKS:
                break
            checks += 1
            other_sim = float(cosine[other])
            if other_sim >= params.threshold and sim - other_sim <= MAX_DROP:
                queue.append((other, other_sim, depth + 1, sim))
    return kept


_DURATION = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|several|few|many|couple)\s*"
    r"(year|month|week|day|hour)s?\b|\bsince\s+\w+\s+\d{4}\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(19|20)\d{2}\b")


def rerank(
    index: Index,
    question: str,
    candidates: Mapping[int, float],
    query_type: QueryType,
    params: Parameters,
    top_k: int,
) -> list[tuple[int, float]]:
    """Every candidate with its hand-weighted score, best first (ties: earlier turn)."""
    names = [w.casefold() for w in re.findall(r"\b[A-Z][a-z]+\b", question)]
    names = [n for n in names if n not in ENGLISH_STOPWORDS]
    keywords = query_keywords(question)
    raw = question.casefold().split()
    phrases = [
        f"{a} {b}"
        for a, b in itertools.pairwise(raw)
        if a not in ENGLISH_STOPWORDS or b not in ENGLISH_STOPWORDS
    ]
    pool = list(candidates)
    if names:
        # The released name filter: keep the candidates naming someone asked about,
        # unless that leaves fewer than half of what the context will hold.
        named = [i for i in pool if any(n in index.texts[i] for n in names)]
        if len(named) >= top_k // 2:
            pool = named
    q = question.casefold()
    months_asked = [m for m in ENGLISH_MONTHS if m in q]
    years_asked = _YEAR.findall(question)
    w = params.weights
    scored = []
    for i in pool:
        text, original, node = index.texts[i], index.originals[i], index.nodes[i]
        keyword = 0.0
        for k in keywords:
            hits = len(re.findall(rf"\b{re.escape(k)}\b", text))
            keyword += 3.0 + 1.5 * (hits - 1) if hits else (1.0 if k in text else 0.0)
            if re.search(rf"\b{re.escape(k)}\b", original):
                keyword += 2.0
        phrase = sum(5.0 for p in phrases if p in text) + sum(3.0 for p in phrases if p in original)
        entity = sum(3.0 for k in keywords for e in node.event.entities if k in e.casefold())
        entity += sum(4.0 for n in names if n in text)
        temporal = 0.0
        if query_type == "temporal":
            temporal += 3.0 if node.event.dates else 0.0
            if "how long" in q and _DURATION.search(text):
                temporal += 5.0
            if any(m in text for m in months_asked):
                temporal += 5.0
                if any(y in text for y in years_asked):
                    temporal += w.get("date_exact", 10.0)
            elif any(m in text for m in ENGLISH_MONTHS):
                temporal += 2.5
            if _YEAR.search(text):
                temporal += 3.0
        speaker = node.speaker.casefold()
        person = sum(3.0 if n == speaker else 0.0 for n in names)
        score = (
            w["keyword"] * keyword
            + w["phrase"] * phrase
            + w["entity"] * entity
            + w["temporal"] * temporal
            + w["similarity"] * 10.0 * candidates[i]
            + person
        )
        scored.append((i, score))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored


def beam_search(
    index: Index,
    query_vector: NDArray[np.float32],
    anchors: Mapping[int, float],
    intent: Intent,
    *,
    beam_width: int = 10,
    max_visited: int = 50,
    structural: float = 0.6,
    semantic: float = 0.4,
) -> list[tuple[int, float]]:
    """The paper's intent-weighted beam search: visited nodes with their path scores, best first.

    A step along a link to ``n`` has transition probability ``structural *
    w(intent, link class) + semantic * cos(query, n)`` (in [0, 1]); a path's score
    is its anchor's score times the product of its transitions. The frontier
    keeps the ``beam_width`` best paths; the search stops after ``max_visited`` nodes.
    """
    weights = INTENT_WEIGHTS[intent]
    cosine = index.vectors @ query_vector
    frontier = [(-score, i) for i, score in anchors.items()]
    heapq.heapify(frontier)
    visited: dict[int, float] = {}
    while frontier and len(visited) < max_visited:
        negative, node = heapq.heappop(frontier)
        if node in visited:
            continue
        visited[node] = -negative
        for other, kind, _ in index.graph.neighbours[node]:
            if other not in visited:
                step = structural * weights[LINK_CLASS[kind]] + semantic * max(
                    0.0, float(cosine[other])
                )
                heapq.heappush(frontier, (negative * step, other))
        if len(frontier) > beam_width:
            frontier = heapq.nsmallest(beam_width, frontier)
            heapq.heapify(frontier)
    return sorted(visited.items(), key=lambda item: (-item[1], item[0]))


def expand_partners(index: Index, ranked: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """``ranked`` with each node's question/answer partners placed right after it.

    Partners are the ends of its ``answered_by`` and ``response_to`` links and, for a
    turn asking a question, the next turn of its session; a partner takes the score
    of the node it follows, so scores stay non-increasing.
    """
    out: list[tuple[int, float]] = []
    seen: set[int] = set()
    for node, score in ranked:
        if node in seen:
            continue
        seen.add(node)
        out.append((node, score))
        partners = [
            other
            for other, kind, _ in index.graph.neighbours[node]
            if kind in ("answered_by", "response_to")
        ]
        following = node + 1
        if (
            "?" in index.nodes[node].text
            and following < len(index.nodes)
            and index.nodes[following].session == index.nodes[node].session
        ):
            partners.append(following)
        for other in dict.fromkeys(partners):
            if other not in seen:
                seen.add(other)
                out.append((other, score))
    return out


def format_context(index: Index, question: str, nodes: Sequence[int], query_type: QueryType) -> str:
    """The "key facts" context: the retrieved turns, most relevant first, with their dates
    and extracted facts, then the sentences that carry the question's words."""
    if not nodes:
        return ""
    lines = ["Memories, most relevant first:"]
    for rank, i in enumerate(nodes, start=1):
        node = index.nodes[i]
        lines.append(f"{rank}. {node.line}")
        if node.event.dates:
            said = "; ".join(f"'{d.phrase}' = {d.value}" for d in node.event.dates)
            lines.append(f"   dates: {said}")
        if node.event.facts:
            lines.append(f"   facts: {'; '.join(node.event.facts[:3])}")
    keywords = [k for k in query_keywords(question) if len(k) > 3]
    excerpts = []
    for i in nodes:
        node = index.nodes[i]
        for sentence in re.split(r"(?<=[.!?])\s+", node.text):
            if sentence.strip() and any(k in sentence.casefold() for k in keywords):
                excerpts.append(f"- {node.speaker}: {sentence.strip()}")
                break
        if len(excerpts) == 5:
            break
    if excerpts:
        header = "Key facts to connect:" if query_type == "multi_hop" else "Key facts:"
        lines += ["", header, *excerpts]
    summaries = []
    for position in dict.fromkeys(index.nodes[i].session for i in nodes):
        if position in index.sessions:
            summaries.append(f"- {index.sessions[position][0]}")
    if summaries:
        lines += ["", "Sessions these memories come from:", *summaries[:3]]
    return "\n".join(lines)

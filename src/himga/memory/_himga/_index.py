"""The compiled HiMGA index: BM25 at every level and one sparse matrix per edge type.

Imports numpy and scipy at module level: :mod:`._memory` imports this module only
after checking that the ``graph`` extra is installed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from himga.memory._himga._cues import asks_what_you_did, date_cue
from himga.memory._himga._entities import entity_mentions
from himga.memory._himga._weights import HiMGAWeights
from himga.memory._text import ENGLISH_STOPWORDS, words

__all__ = ["EDGE_TYPES", "LEVELS", "Index", "Turns", "base_scores", "final_scores", "seeds"]

LEVELS = ("turn", "window1", "window2", "session")
"""The lexical levels, in the order of :meth:`Index.levels`' rows."""
EDGE_TYPES = ("temporal", "membership", "qa", "entity", "semantic")
"""The edge types, in the order of :meth:`Index.propagate`'s rows."""

# An entity linking more turns than this says little about any of them (a speaker's name,
# "2023"): it forms no edges. Grows with the conversation, never below 8.
_MAX_ENTITY_TURNS = 8
# A content stem found in 2..this many turns is a "rare word" entity.
_RARE_WORD_TURNS = 3
_SEMANTIC_NEIGHBOURS = 5
_BLOCK = 1024

# How many of the conversation's words, nearest the query by embedding, expand it.
_EXPANSION_TERMS = 10

Analyse = Callable[[str], list[str]]
EmbedWords = Callable[[list[str]], NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class Turns:
    """What the index is built from, one entry per ingested turn, in order."""

    roles: Sequence[str]
    contents: Sequence[str]
    sessions: Sequence[int]  # the turn's session number, 0-based, in first-seen order
    session_dates: Sequence[datetime | None]


def _bm25(counts: Any, k1: float, b: float) -> Any:
    """Lucene BM25 partial scores of a (documents x terms) count matrix, as CSC."""
    counts = sp.csr_array(counts, dtype=np.float64)
    documents = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    average = lengths.mean() if documents else 0.0
    frequency = np.bincount(counts.indices, minlength=counts.shape[1])  # CSR: one entry per pair
    idf = np.log1p((documents - frequency + 0.5) / (frequency + 0.5))
    norm = k1 * (1 - b + b * lengths / average) if average > 0 else np.full(documents, k1)
    rows = np.repeat(np.arange(documents), np.diff(counts.indptr))
    tf = counts.data
    counts.data = idf[counts.indices] * tf / (tf + norm[rows])
    return counts.tocsc()


def _band(positions: list[list[int]], radius: int, size: int) -> Any:
    """Turn x turn: 1 where two turns of one session are at most ``radius`` turns apart."""
    rows: list[int] = []
    cols: list[int] = []
    for turns in positions:
        for at, turn in enumerate(turns):
            near = turns[max(0, at - radius) : at + radius + 1]
            rows.extend([turn] * len(near))
            cols.extend(near)
    return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(size, size))


def _symmetric_normalised(matrix: Any) -> Any:
    """``D^-1/2 A D^-1/2`` with D the row sums: what spreads activation along the edges."""
    degree = np.asarray(matrix.sum(axis=1)).ravel()
    scale = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=scale, where=degree > 0)
    return sp.csr_array(sp.diags_array(scale) @ matrix @ sp.diags_array(scale))


class Index:
    """BM25 scores at four levels and typed edges over the turns of one memory.

    Levels: the turn (``"speaker: content"``), its context windows of +-1 and +-2
    turns within its session, and its session. Edge types (turn x turn, weights
    >= 0, ``graphs``): ``temporal`` (consecutive turns of a session, both ways),
    ``membership`` (two turns of one session), ``qa`` (a turn containing a question
    mark -> the next turn of its session, said by another speaker; directed: row =
    the answer),
    ``entity`` (turns of different sessions sharing an entity, weighted by the
    sum of the shared entities' idf) and ``semantic`` (each turn's nearest
    neighbours by embedding cosine, when ``embeddings`` are given). ``graphs``
    is built on first access; :meth:`propagate` spreads ``membership`` through
    session sums, linear in turns, never through its quadratic matrix.

    With ``embed_words`` (what embeds words as queries), the conversation's
    content words -- stopwords, numbers, words under 3 letters and names
    (proper nouns, speakers' names) left out -- are embedded once each, for
    :meth:`expansion`. Names are left out because a name's embedding is near
    any query naming it and near look-alike words, and says nothing of a topic.

    ``terseness`` (per turn, in (0, 1]) is the conversation's median turn length
    over its speaker's, capped at 1: 1 for every speaker of a conversation
    between equals, small for the verbose side of a lopsided one (an assistant's
    long replies), whose turns stand on their own rather than lean on context.
    """

    def __init__(
        self,
        turns: Turns,
        analyse: Analyse,
        *,
        k1: float,
        b: float,
        embeddings: NDArray[np.float32] | None = None,
        embed_words: EmbedWords | None = None,
    ) -> None:
        size = len(turns.contents)
        self.size = size
        self.sessions = np.asarray(turns.sessions, dtype=np.int64)
        self.session_dates = list(turns.session_dates)
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for turn, (role, content) in enumerate(zip(turns.roles, turns.contents, strict=True)):
            for term in analyse(f"{role}: {content}"):
                rows.append(turn)
                cols.append(vocabulary.setdefault(term, len(vocabulary)))
        self.vocabulary = vocabulary
        terms = len(vocabulary)
        counts = sp.csr_array(
            (np.ones(len(rows)), (rows, cols)), shape=(size, terms), dtype=np.float64
        )
        counts.sum_duplicates()
        # Speakers by number, first seen first (Python equality: numpy's str scalars would
        # drop trailing NULs and merge "Ann\0" into "Ann").
        number = {role: n for n, role in enumerate(dict.fromkeys(turns.roles))}
        self._speaker = np.fromiter((number[role] for role in turns.roles), np.int64, size)
        # A speaker named only by stopwords ("A", "I") is never "named": queries say those anyway.
        self._names = [frozenset(words(role)) - ENGLISH_STOPWORDS for role in number]
        self._assistant = np.fromiter(
            (role.casefold() == "assistant" for role in turns.roles), bool, size
        )
        self.terseness = self._terseness(np.asarray(counts.sum(axis=1)).ravel())
        mentions = entity_mentions(turns.contents)
        self._expansion_terms, self._term_vectors = self._content_words(
            turns, analyse, mentions, embed_words
        )
        positions: list[list[int]] = [[] for _ in turns.session_dates]
        for turn, session in enumerate(turns.sessions):
            positions[session].append(turn)
        membership = sp.csr_array(
            (np.ones(size), (self.sessions, np.arange(size))), shape=(len(positions), size)
        )
        window1, window2 = _band(positions, 1, size), _band(positions, 2, size)
        self._levels = [
            _bm25(counts, k1, b),
            _bm25(window1 @ counts, k1, b),
            _bm25(window2 @ counts, k1, b),
            _bm25(membership @ counts, k1, b),
        ]
        self._indptr = [level.indptr.tolist() for level in self._levels]

        self._membership = membership
        # A session of n turns is a clique: every turn has n - 1 neighbours, so the symmetric
        # normalisation is a division by n - 1 (0 for a lone turn). Spreading through the
        # session sums (O(turns)) instead of the clique's matrix (O(session length^2)) keeps
        # one long session -- a chat log ingested as a single session -- cheap.
        session_lengths = np.bincount(self.sessions, minlength=len(positions))
        neighbours = session_lengths[self.sessions] - 1.0
        self._per_neighbour = np.divide(1.0, neighbours, out=np.zeros(size), where=neighbours > 0)
        self._edges: dict[str, Any] = {
            "temporal": sp.csr_array(window1 - sp.eye_array(size, format="csr")),
            "qa": self._question_answer(turns),
            "entity": self._entities(mentions, counts),
            "semantic": self._semantic(embeddings),
        }
        for graph in self._edges.values():
            graph.eliminate_zeros()
        self._spread = {name: _symmetric_normalised(g) for name, g in self._edges.items()}
        # qa is directed: the question's activation goes to its answer only.
        self._spread["qa"] = sp.csr_array(self._edges["qa"])

    def _terseness(self, lengths: NDArray[np.float64]) -> NDArray[np.float64]:
        terseness = np.ones(self.size)
        if not self.size:
            return terseness
        overall = float(np.median(lengths))
        for speaker in range(len(self._names)):
            mine = self._speaker == speaker
            typical = float(np.median(lengths[mine]))
            if typical > overall:
                terseness[mine] = overall / typical
        return terseness

    def _question_answer(self, turns: Turns) -> Any:
        rows, cols = [], []
        for turn in range(self.size - 1):
            same_session = turns.sessions[turn] == turns.sessions[turn + 1]
            other_speaker = turns.roles[turn] != turns.roles[turn + 1]
            if same_session and other_speaker and "?" in turns.contents[turn]:
                rows.append(turn + 1)
                cols.append(turn)
        return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(self.size, self.size))

    def _content_words(
        self,
        turns: Turns,
        analyse: Analyse,
        mentions: list[set[str]],
        embed_words: EmbedWords | None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32] | None]:
        """The expansion candidates' term ids and embeddings (each stem's commonest word)."""
        if embed_words is None:
            return np.zeros(0, np.int64), None
        names = {key[2:] for found in mentions for key in found if key.startswith("n:")}
        names.update(*self._names)
        frequency: dict[str, int] = {}
        for content in turns.contents:
            for word in words(content):
                if len(word) >= 3 and word.isalpha() and word not in ENGLISH_STOPWORDS:
                    frequency[word] = frequency.get(word, 0) + 1
        surface: dict[int, str] = {}
        for word in sorted(frequency, key=lambda w: (-frequency[w], w)):
            stems = analyse(word)
            if word in names or len(stems) != 1 or stems[0] not in self.vocabulary:
                continue
            surface.setdefault(self.vocabulary[stems[0]], word)
        if not surface:
            return np.zeros(0, np.int64), None
        ids = np.fromiter(surface, np.int64, len(surface))
        return ids, embed_words(list(surface.values()))

    def _entities(self, mentions: list[set[str]], counts: Any) -> Any:
        present = counts.copy()
        present.data[:] = 1.0
        frequency = np.bincount(present.indices, minlength=present.shape[1])
        long_enough = np.fromiter(
            (len(term) >= 4 for term in self.vocabulary), bool, len(frequency)
        )
        rare = long_enough & (frequency >= 2) & (frequency <= _RARE_WORD_TURNS)
        keys: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for turn, found in enumerate(mentions):
            columns = present.indices[present.indptr[turn] : present.indptr[turn + 1]]
            rare_words = {f"w:{column}" for column in columns[rare[columns]].tolist()}
            for key in sorted(found | rare_words):
                rows.append(turn)
                cols.append(keys.setdefault(key, len(keys)))
        incidence = sp.csr_array(
            (np.ones(len(rows)), (rows, cols)), shape=(self.size, len(keys)), dtype=np.float64
        )
        linked = np.bincount(incidence.indices, minlength=len(keys))
        cap = max(_MAX_ENTITY_TURNS, math.isqrt(self.size))
        useful = (linked >= 2) & (linked <= cap)
        idf = np.zeros(len(keys))
        idf[useful] = np.log(self.size / linked[useful])
        weighted = incidence @ sp.diags_array(np.sqrt(idf))
        shared = sp.coo_array(weighted @ weighted.T)
        across = self.sessions[shared.row] != self.sessions[shared.col]
        return sp.csr_array(
            (shared.data[across], (shared.row[across], shared.col[across])),
            shape=(self.size, self.size),
        )

    def _semantic(self, embeddings: NDArray[np.float32] | None) -> Any:
        if embeddings is None or self.size < 2:
            return sp.csr_array((self.size, self.size))
        neighbours = min(_SEMANTIC_NEIGHBOURS, self.size - 1)
        rows, cols, weights = [], [], []
        # Row blocks keep the similarity matrix at _BLOCK x turns, not turns x turns.
        for start in range(0, self.size, _BLOCK):
            block = embeddings[start : start + _BLOCK] @ embeddings.T
            mine = np.arange(start, start + len(block))
            block[mine - start, mine] = -np.inf
            nearest = np.argpartition(-block, neighbours - 1, axis=1)[:, :neighbours]
            rows.append(np.repeat(mine, neighbours))
            cols.append(nearest.ravel())
            weights.append(np.maximum(np.take_along_axis(block, nearest, axis=1).ravel(), 0.0))
        knn = sp.csr_array(
            (np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))),
            shape=(self.size, self.size),
        )
        return sp.csr_array(knn.maximum(knn.T))

    def _bm25_sum(
        self, row: int, ids: Sequence[int], weights: Sequence[float] | None = None
    ) -> NDArray[np.float64]:
        """Per document of level ``row``, the sum of the BM25 scores of terms ``ids``.

        ``ids`` is not empty; with ``weights``, each term's score counts its weight times.
        """
        level, indptr = self._levels[row], self._indptr[row]
        spans = [(indptr[term], indptr[term + 1]) for term in ids]
        docs = np.concatenate([level.indices[start:end] for start, end in spans])
        if weights is None:
            partial = np.concatenate([level.data[start:end] for start, end in spans])
        else:
            partial = np.concatenate(
                [w * level.data[a:b] for w, (a, b) in zip(weights, spans, strict=True)]
            )
        sums = np.bincount(docs, weights=partial, minlength=level.shape[0])
        return np.asarray(sums, dtype=np.float64)  # float already: the stubs cannot tell

    def levels(self, query_terms: Sequence[str]) -> NDArray[np.float64]:
        """(levels x turns) BM25 scores of the query, each row divided by its maximum.

        The session row holds each turn's session score.
        """
        ids = [self.vocabulary[term] for term in query_terms if term in self.vocabulary]
        scores = np.zeros((len(LEVELS), self.size))
        if not ids:
            return scores
        for row in range(len(LEVELS)):
            values = self._bm25_sum(row, ids)
            if row == len(LEVELS) - 1:
                values = values[self.sessions]
            top = values.max()
            if top > 0:
                scores[row] = values / top
        return scores

    def expansion(
        self, query_vector: NDArray[np.float32], query_terms: Sequence[str]
    ) -> NDArray[np.float64]:
        """Per turn, the BM25 score of the query's nearest content words, divided by its maximum.

        The nearest ``_EXPANSION_TERMS`` candidate words by cosine with
        ``query_vector`` (the query's embedding), the query's own terms left out,
        each count their cosine times (negative cosines not at all): "martial
        arts" reaches a turn about taekwondo that shares no word with it. Zeros
        without ``embed_words`` or candidates.
        """
        scores = np.zeros(self.size)
        if self._term_vectors is None:
            return scores
        own = {self.vocabulary[term] for term in query_terms if term in self.vocabulary}
        cosine = self._term_vectors @ query_vector
        keep = ~np.isin(self._expansion_terms, list(own))
        ids, cosine = self._expansion_terms[keep], cosine[keep]
        if len(ids) > _EXPANSION_TERMS:
            nearest = np.argpartition(-cosine, _EXPANSION_TERMS - 1)[:_EXPANSION_TERMS]
            ids, cosine = ids[nearest], cosine[nearest]
        if not len(ids):
            return scores
        scores = self._bm25_sum(0, ids.tolist(), np.maximum(cosine, 0.0).tolist())
        top = scores.max()
        return scores / top if top > 0 else scores

    @functools.cached_property
    def graphs(self) -> dict[str, Any]:
        """One turn x turn ``csr_array`` per edge type, in :data:`EDGE_TYPES` order.

        For inspection and export: :meth:`propagate` never builds ``membership``,
        whose entries grow with the square of a session's length.
        """
        membership = self._membership
        same_session = sp.csr_array(membership.T @ membership) - sp.eye_array(
            self.size, format="csr"
        )
        same_session.eliminate_zeros()
        return {
            name: same_session if name == "membership" else self._edges[name] for name in EDGE_TYPES
        }

    def propagate(self, seeds: NDArray[np.float64]) -> NDArray[np.float64]:
        """(edge types x ...) the activation each edge type spreads from ``seeds`` (... x turns)."""
        spread = []
        for name in EDGE_TYPES:
            if name == "membership":
                in_session = (self._membership @ seeds.T).T[..., self.sessions]
                spread.append((in_session - seeds) * self._per_neighbour)
            else:
                spread.append((self._spread[name] @ seeds.T).T)
        return np.stack(spread)

    def named_speakers(self, query: str) -> NDArray[np.float64] | None:
        """Per turn, 1 if its speaker is named in the query, else 0; None: none or all named.

        A speaker is named when every word of its role but stopwords is a word of
        the query (case-folded): "What did Caroline paint?" names ``Caroline``; a
        role of stopwords only ("A", "I") is never named.
        """
        said = set(words(query))
        named = [speaker for speaker, name in enumerate(self._names) if name and name <= said]
        if not named or len(named) == len(self._names):
            return None
        return np.isin(self._speaker, named).astype(np.float64)

    def addressed(self, query: str) -> NDArray[np.float64] | None:
        """Per turn, 1 if the query asks what "you" said or did and the assistant said it.

        The assistant is the speaker whose role is ``"assistant"`` (case-folded),
        as in a user's chat with one: it is who "you" is in the user's question.
        None when the query asks no such thing (:func:`asks_what_you_did`) or no
        turn is the assistant's.
        """
        if not self._assistant.any() or not asks_what_you_did(query):
            return None
        return self._assistant.astype(np.float64)

    def date_cue(self, query: str) -> NDArray[np.float64] | None:
        """Per turn, how well its session's date fits the query's date cues; None: no cue."""
        cue = date_cue(query, self.session_dates)
        return None if cue is None else np.asarray(cue)[self.sessions]


def base_scores(
    levels: NDArray[np.float64],
    weights: HiMGAWeights,
    reach: NDArray[np.float64],
    dense: NDArray[np.float64] | None = None,
    expanded: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """(queries x turns) fused level scores, each row divided by its maximum.

    ``levels`` is (levels x queries x turns), ``dense`` (queries x turns) cosines,
    ``expanded`` (queries x turns) :meth:`Index.expansion` scores; the context
    levels (windows, session) count ``reach`` (per turn) times.
    """
    context = np.tensordot(
        np.array([weights.window1, weights.window2, weights.session]), levels[1:], axes=1
    )
    base = weights.turn * levels[0] + context * reach
    if dense is not None:
        base = base + weights.dense * np.maximum(dense, 0.0)
    if expanded is not None:
        base = base + weights.expansion * expanded
    top = base.max(axis=1, keepdims=True)
    normalised: NDArray[np.float64] = base / np.where(top > 0, top, 1.0)
    return normalised


def seeds(base: NDArray[np.float64], count: int) -> NDArray[np.float64]:
    """``base`` with all but each row's ``count`` best scores set to 0."""
    if base.shape[1] <= count:
        return base
    kept = np.argpartition(-base, count - 1, axis=1)[:, :count]
    seeded = np.zeros_like(base)
    np.put_along_axis(seeded, kept, np.take_along_axis(base, kept, axis=1), axis=1)
    return seeded


def final_scores(
    index: Index,
    levels: NDArray[np.float64],
    cue: NDArray[np.float64],
    named: NDArray[np.float64],
    weights: HiMGAWeights,
    dense: NDArray[np.float64] | None = None,
    expanded: NDArray[np.float64] | None = None,
    addressed: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """(queries x turns) HiMGA scores.

    ``cue`` (queries x turns) is 0 where no date cue, ``named`` 1 where the query
    names the turn's speaker (:meth:`Index.named_speakers`), else 0. What a turn
    receives along the edges counts ``terseness ** verbosity`` times, as its context.
    ``addressed`` (queries x turns, :meth:`Index.addressed`) is 1 where the query
    asks what "you" said and the turn is the assistant's: such a turn counts as
    named, and its context and what it receives count in full, undamped -- the
    damping bets that the verbose side's replies echo a question rather than
    answer it, and this query says the answer is the verbose side's.
    """
    reach = index.terseness**weights.verbosity
    if addressed is not None:
        reach = np.where(addressed > 0, 1.0, reach)
        named = np.maximum(named, addressed)
    base = base_scores(levels, weights, reach, dense, expanded)
    spread = index.propagate(seeds(base, weights.seeds))
    edge_weights = np.array([getattr(weights, name) for name in EDGE_TYPES])
    received = np.tensordot(edge_weights, spread, axes=1) * reach
    final: NDArray[np.float64] = (base + received) * (1.0 + weights.date * cue)
    return final * (1.0 + weights.speaker * named)

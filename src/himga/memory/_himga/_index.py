"""The HiMGA index: BM25 at every level and one edge type per relation between turns.

Imports numpy and scipy at module level: :mod:`._memory` imports this module only
after checking that the ``graph`` extra is installed.

The index grows (:meth:`Index.extend`): what is per turn -- its terms, its
capitalised words and numbers, its embedding -- is computed once, when the turn
is added; what depends on the whole history -- document frequencies, lengths,
which words are names or rare, entity weights, degrees -- is recompiled from
those per-turn records with a few vectorised passes. No turn x turn matrix is
kept: the context windows' and sessions' BM25 statistics are aggregated from
the turn-level postings of the query's terms, and activation spreads along the
entity edges through the entity -> turns postings of the seeds' entities.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from himga.memory._himga._cues import asks_what_you_did, date_cue
from himga.memory._himga._entities import Scanned, aliases, resolve, scan
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
# The context windows' radii (LEVELS' window1 and window2).
_RADII = (1, 2)

# How many of the conversation's words, nearest the query by embedding, expand it.
_EXPANSION_TERMS = 10

Analyse = Callable[[str], list[str]]
EmbedWords = Callable[[list[str]], NDArray[np.float32]]
Int64s = NDArray[np.int64]
Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Turns:
    """What the index is built from, one entry per ingested turn, in order."""

    roles: Sequence[str]
    contents: Sequence[str]
    sessions: Sequence[int]  # the turn's session number, 0-based, in first-seen order
    session_dates: Sequence[datetime | None]


def _ranges(starts: Int64s, counts: Int64s) -> Int64s:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    shift = np.repeat(starts - (ends - counts), counts)
    return shift + np.arange(total, dtype=np.int64)


def _norm(lengths: Floats, k1: float, b: float) -> Floats:
    """Lucene BM25's per-document ``k1 * (1 - b + b * length / average length)``."""
    average = lengths.mean() if len(lengths) else 0.0
    if average > 0:
        norm: Floats = k1 * (1 - b + b * lengths / average)
        return norm
    return np.full(len(lengths), k1)


def _idf(documents: int, frequency: Any) -> Any:
    """Lucene BM25's idf of a term found in ``frequency`` of ``documents`` documents."""
    return np.log1p((documents - frequency + 0.5) / (frequency + 0.5))


def _sum_at(keys: Int64s, weights: Floats, size: int) -> Floats:
    """Per key in ``range(size)``, the sum of its ``weights`` (float, also when none)."""
    sums: Floats = np.bincount(keys, weights=weights, minlength=size).astype(np.float64, copy=False)
    return sums


def _appended(
    indptr: Int64s, runs: Sequence[NDArray[Any]], keys: Int64s, values: Sequence[NDArray[Any]]
) -> tuple[Int64s, list[NDArray[Any]]]:
    """Grouped arrays (``runs``, one run per key, delimited by ``indptr``) with entries added.

    Entry ``i`` of ``values`` (parallel arrays) goes at the end of key ``keys[i]``'s run,
    after the run's entries and the earlier new ones: what :func:`_grouped` of the
    old keys followed by ``keys`` gives, without sorting the old entries again (one
    sequential copy of them). ``keys`` may name keys past ``indptr``'s (new ones).
    """
    size = max(len(indptr) - 1, int(keys.max()) + 1 if len(keys) else 0)
    order, added = _grouped(keys, size)
    ends = np.concatenate([indptr[1:], np.full(size - len(indptr) + 1, indptr[-1])])
    # np.insert keeps the order of entries inserted at one place: the new runs stay stable.
    at = np.repeat(ends, np.diff(added))
    merged = [np.insert(run, at, new[order]) for run, new in zip(runs, values, strict=True)]
    return np.concatenate([[0], ends]) + added, merged


def _grouped(keys: Int64s, order_size: int) -> tuple[Int64s, Int64s]:
    """``(order, indptr)``: ``keys`` sorted stably, and where each key's run starts.

    A counting sort (scipy's COO -> CSR conversion, linear), not a comparison sort.
    """
    positions = np.arange(len(keys), dtype=np.int64)
    grouped = sp.csr_array(
        (np.ones(len(keys)), (keys, positions)), shape=(order_size, max(len(keys), 1))
    )
    return grouped.indices.astype(np.int64), grouped.indptr.astype(np.int64)


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
    builds the matrices for inspection; :meth:`propagate` never does: it
    spreads ``membership`` through session sums and ``entity`` through the
    seeds' entities, at a cost that grows with the seeds' neighbourhoods, not
    with the graphs.

    :meth:`extend` adds the turns ingested since: the index then equals one
    built from scratch on the whole history (same scores, up to the order in
    which floating-point sums are taken).

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
        self._analyse = analyse
        self._k1 = k1
        self._b = b
        self._embed_words = embed_words
        self.size = 0
        self.vocabulary: dict[str, int] = {}
        # Per turn, appended once: its (term id, count) pairs, length, session, speaker...
        self._term_turns = array("q")
        self._term_ids = array("q")
        self._term_counts = array("d")
        self._lengths = array("d")
        self._session_of = array("q")
        self._speaker_of = array("q")
        self._asks = array("b")  # contains a question mark
        self._long_term = array("b")  # per term: 4 letters or more (a rare word can be one)
        self._speakers: dict[str, int] = {}
        self._names: list[frozenset[str]] = []
        self._assistants: set[int] = set()  # speakers whose role is "assistant"
        self._scanned: list[Scanned] = []
        self._mentions: list[list[int]] = []  # entity ids of its proper nouns and numbers
        self._entity_ids: dict[str, int] = {}
        self._proper: set[str] = set()
        self._alias: dict[str, str] = {}
        self._word_counts: dict[str, int] = {}  # content words, for the expansion
        self._word_stems: dict[str, list[str]] = {}
        self._semantic_knn: tuple[Int64s, Floats] | None = None  # per turn: neighbours, cosines
        # The turn level's postings, grouped by term (CSC), and how many entries they hold.
        self._indptr = np.zeros(1, np.int64)
        self._postings = np.zeros(0, np.int64)
        self._posting_counts = np.zeros(0, np.float64)
        self._entries = 0
        self.extend(turns, embeddings)

    def extend(self, turns: Turns, embeddings: NDArray[np.float32] | None = None) -> None:
        """Add the turns of ``turns`` after the first :attr:`size` (those must be unchanged).

        ``embeddings`` (with an embedder): every turn's, the earlier ones unchanged.
        """
        start = self.size
        new_proper: set[str] = set()
        vocabulary = self.vocabulary
        for turn in range(start, len(turns.contents)):
            role, content = turns.roles[turn], turns.contents[turn]
            counts = Counter(self._analyse(f"{role}: {content}"))  # first-seen order
            for term in counts:
                if term not in vocabulary:
                    vocabulary[term] = len(vocabulary)
                    self._long_term.append(len(term) >= 4)
            self._term_turns.extend([turn] * len(counts))
            self._term_ids.extend([vocabulary[term] for term in counts])
            self._term_counts.extend(map(float, counts.values()))
            self._lengths.append(float(counts.total()))
            self._session_of.append(turns.sessions[turn])
            speaker = self._speakers.get(role)
            if speaker is None:
                speaker = self._speakers[role] = len(self._speakers)
                # A speaker named only by stopwords ("A", "I") is never "named".
                self._names.append(frozenset(words(role)) - ENGLISH_STOPWORDS)
                if role.casefold() == "assistant":
                    self._assistants.add(speaker)
            self._speaker_of.append(speaker)
            self._asks.append("?" in content)
            found = scan(content)
            self._scanned.append(found)
            new_proper |= found.mid_sentence - self._proper
            if self._embed_words is not None:
                for word in words(content):
                    if len(word) >= 3 and word.isalpha() and word not in ENGLISH_STOPWORDS:
                        self._word_counts[word] = self._word_counts.get(word, 0) + 1
        self.size = len(turns.contents)
        self.session_dates = list(turns.session_dates)
        self._resolve_mentions(start, new_proper)
        self._compile(embeddings, start)
        self.__dict__.pop("graphs", None)

    def _resolve_mentions(self, start: int, new_proper: set[str]) -> None:
        """Every turn's proper-noun and number entities, given the proper nouns known now.

        A proper noun first seen now, or an alias that changed, changes the
        entities of the earlier turns that write that word with a capital.
        """
        changed: set[str] = set()
        if new_proper:
            self._proper |= new_proper
            alias = aliases(self._proper)
            changed = new_proper | {
                key
                for key in alias.keys() | self._alias.keys()
                if alias.get(key) != self._alias.get(key)
            }
            self._alias = alias
        ids = self._entity_ids
        redo = []
        if changed:  # else nothing earlier changes: no pass over the earlier turns
            scanned = self._scanned
            redo = [
                turn for turn in range(start) if not changed.isdisjoint(scanned[turn].capitalised)
            ]
        for turn in chain(redo, range(start, self.size)):
            keys = sorted(resolve(self._scanned[turn], self._proper, self._alias))
            mentioned = [ids.setdefault(key, len(ids)) for key in keys]
            if turn < len(self._mentions):
                self._mentions[turn] = mentioned
            else:
                self._mentions.append(mentioned)

    def _compile(self, embeddings: NDArray[np.float32] | None, start: int) -> None:
        """Recompute everything that depends on the whole history, vectorised."""
        size, k1, b = self.size, self._k1, self._b
        terms = len(self.vocabulary)
        self.sessions: Int64s = np.array(self._session_of, dtype=np.int64)
        # Each session ingested in one piece, the usual case: sessions ascend with turns.
        self._ordered = bool((np.diff(self.sessions) >= 0).all())
        self._contexts: OrderedDict[tuple[int, int], tuple[Int64s, Floats]] = OrderedDict()
        self._context_entries = 0
        self._reach: dict[float, Floats] = {}
        session_count = len(self.session_dates)
        lengths = np.array(self._lengths, dtype=np.float64)
        # The turn level: a (turns x terms) CSC matrix of term counts.
        # The new turns come after every earlier one: their postings extend each term's run.
        first = self._entries
        self._entries = len(self._term_ids)
        self._indptr, (self._postings, self._posting_counts) = _appended(
            np.pad(self._indptr, (0, terms + 1 - len(self._indptr)), mode="edge"),
            (self._postings, self._posting_counts),
            np.array(self._term_ids[first:], dtype=np.int64),
            (
                np.array(self._term_turns[first:], dtype=np.int64),
                np.array(self._term_counts[first:], dtype=np.float64),
            ),
        )
        frequency = np.diff(self._indptr)
        self._turn_idf = _idf(size, frequency)
        self._turn_norm = _norm(lengths, k1, b)
        # Context windows: each turn's neighbours at +-1 and +-2 places within its session.
        by_session = np.arange(size) if self._ordered else np.argsort(self.sessions, kind="stable")
        sorted_sessions = self.sessions[by_session]
        self._neighbours: dict[int, Int64s] = {}
        for offset in (-2, -1, 1, 2):
            neighbour = np.full(size, -1, np.int64)
            here = np.arange(max(0, -offset), size - max(0, offset))
            same = sorted_sessions[here] == sorted_sessions[here + offset]
            neighbour[by_session[here[same]]] = by_session[here[same] + offset]
            self._neighbours[offset] = neighbour
        self._window_norm = {}
        for radius in _RADII:
            window = lengths.copy()
            for offset in range(-radius, radius + 1):
                if offset:
                    neighbour = self._neighbours[offset]
                    window += np.where(neighbour >= 0, lengths[neighbour], 0.0)
            self._window_norm[radius] = _norm(window, k1, b)
        self._session_norm = _norm(_sum_at(self.sessions, lengths, session_count), k1, b)
        session_lengths = np.bincount(self.sessions, minlength=session_count)
        neighbours = session_lengths[self.sessions] - 1.0
        self._per_neighbour = np.divide(1.0, neighbours, out=np.zeros(size), where=neighbours > 0)
        # Speakers.
        self._speaker = np.array(self._speaker_of, dtype=np.int64)
        self._assistant = np.isin(self._speaker, list(self._assistants))
        self.terseness = self._terseness(lengths)
        # qa: a question answered by the next turn of its session, said by someone else.
        asks = np.array(self._asks, dtype=bool)
        answered = np.zeros(size, bool)
        answered[:-1] = (
            asks[:-1]
            & (self.sessions[:-1] == self.sessions[1:])
            & (self._speaker[:-1] != self._speaker[1:])
        )
        self._answered = answered
        # temporal: 1 / sqrt(degree), the degree being the turn's 0, 1 or 2 neighbours.
        degree = (self._neighbours[-1] >= 0).astype(np.float64) + (self._neighbours[1] >= 0)
        self._temporal_scale = np.divide(1.0, np.sqrt(degree), out=np.zeros(size), where=degree > 0)
        self._compile_entities(frequency)
        self._compile_semantic(embeddings, start)
        self.__dict__.pop("_semantic_spread", None)
        self._expansion_terms, self._term_vectors = self._content_words()

    def _compile_entities(self, frequency: Int64s) -> None:
        """The entity -> turns postings, each entity's weight and each turn's degree."""
        size = self.size
        mentioned = np.fromiter(map(len, self._mentions), np.int64, size)
        pair_turn = np.repeat(np.arange(size, dtype=np.int64), mentioned)
        pair_entity = np.fromiter(
            chain.from_iterable(self._mentions), np.int64, int(mentioned.sum())
        )
        named = len(self._entity_ids)
        # Rare words: content stems of 4 letters or more found in 2.._RARE_WORD_TURNS turns.
        long_enough = np.array(self._long_term, dtype=bool)
        rare = long_enough & (frequency >= 2) & (frequency <= _RARE_WORD_TURNS)
        entry_term = np.repeat(np.arange(len(frequency), dtype=np.int64), frequency)
        rare_entry = rare[entry_term]
        pair_turn = np.concatenate([pair_turn, self._postings[rare_entry]])
        pair_entity = np.concatenate([pair_entity, named + entry_term[rare_entry]])
        entities = named + len(frequency)
        linked = np.bincount(pair_entity, minlength=entities)
        cap = max(_MAX_ENTITY_TURNS, math.isqrt(size))
        useful = (linked >= 2) & (linked <= cap)
        keep = useful[pair_entity]
        pair_turn, pair_entity = pair_turn[keep], pair_entity[keep]
        idf = np.zeros(entities)
        idf[useful] = np.log(size / linked[useful])
        weight = np.sqrt(idf)
        self._entity_weight = weight * weight  # what sharing the entity adds to an edge
        order, self._entity_turn_indptr = _grouped(pair_entity, entities)
        self._entity_turns = pair_turn[order]
        # A turn's degree: over its entities, the weight times the turns of *other*
        # sessions mentioning it (the edges join turns of different sessions only).
        by_entity = pair_entity[order]
        sessions = self.sessions[self._entity_turns]
        if self._ordered:
            # Sessions in turn order (each ingested in one piece, the usual case): an
            # entity's turns, ascending, run through its sessions in order.
            first = np.flatnonzero(np.diff(by_entity, prepend=-1) | np.diff(sessions, prepend=-1))
            run = np.diff(first, append=len(by_entity))
            same_session = np.repeat(run, run)
        else:
            _, where, counts = np.unique(
                sessions * entities + by_entity, return_inverse=True, return_counts=True
            )
            same_session = counts[where]
        others = np.empty(len(order))
        others[order] = linked[by_entity] - same_session  # back in pair order
        order, self._turn_entity_indptr = _grouped(pair_turn, size)
        self._turn_entities = pair_entity[order]
        # Summed turn by turn, each turn's entities in the order its text gives them (not
        # by entity number, which depends on when an entity was first seen): an index
        # grown turn by turn holds the very same degrees as one built at once.
        degree = _sum_at(
            pair_turn[order], self._entity_weight[self._turn_entities] * others[order], size
        )
        self._entity_scale = np.divide(1.0, np.sqrt(degree), out=np.zeros(size), where=degree > 0)

    def _compile_semantic(self, embeddings: NDArray[np.float32] | None, start: int) -> None:
        """Each turn's nearest neighbours by cosine: the new turns' found, the others' updated."""
        if embeddings is None or self.size < 2:
            self._semantic_knn = None
            return
        neighbours = min(_SEMANTIC_NEIGHBOURS, self.size - 1)
        if self._semantic_knn is not None and self._semantic_knn[0].shape[1] != neighbours:
            start = 0  # fewer than _SEMANTIC_NEIGHBOURS turns before: start over
        if self._semantic_knn is None:
            start = 0
        ids = np.zeros((self.size, neighbours), np.int64)
        cosines = np.zeros((self.size, neighbours))
        if start:
            assert self._semantic_knn is not None
            ids[:start], cosines[:start] = self._semantic_knn
        # Row blocks keep the similarity matrix at _BLOCK x turns, not turns x turns.
        for first in range(start, self.size, _BLOCK):
            block = embeddings[first : first + _BLOCK] @ embeddings.T
            mine = np.arange(first, first + len(block))
            block[mine - first, mine] = -np.inf
            nearest = np.argpartition(-block, neighbours - 1, axis=1)[:, :neighbours]
            ids[mine] = nearest
            cosines[mine] = np.take_along_axis(block, nearest, axis=1)
            if start:
                # An earlier turn's neighbours may now include some of these new turns.
                old = block[:, :start].T  # (earlier turns x this block)
                both = np.concatenate([cosines[:start], old], axis=1)
                both_ids = np.concatenate(
                    [ids[:start], np.broadcast_to(mine, (start, len(mine)))], axis=1
                )
                best = np.argpartition(-both, neighbours - 1, axis=1)[:, :neighbours]
                ids[:start] = np.take_along_axis(both_ids, best, axis=1)
                cosines[:start] = np.take_along_axis(both, best, axis=1)
        self._semantic_knn = (ids, cosines)

    @functools.cached_property
    def _semantic_spread(self) -> Any:
        graph = self._semantic_graph()
        return _symmetric_normalised(graph)

    def _semantic_graph(self) -> Any:
        if self._semantic_knn is None:
            return sp.csr_array((self.size, self.size))
        ids, cosines = self._semantic_knn
        rows = np.repeat(np.arange(self.size), ids.shape[1])
        knn = sp.csr_array(
            (np.maximum(cosines.ravel(), 0.0), (rows, ids.ravel())), shape=(self.size, self.size)
        )
        graph = sp.csr_array(knn.maximum(knn.T))
        graph.eliminate_zeros()
        return graph

    def _terseness(self, lengths: Floats) -> Floats:
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

    def _content_words(self) -> tuple[Int64s, NDArray[np.float32] | None]:
        """The expansion candidates' term ids and embeddings (each stem's commonest word)."""
        if self._embed_words is None:
            return np.zeros(0, np.int64), None
        names = {self._alias.get(key, key) for key in self._proper}
        names.update(*self._names)
        frequency = self._word_counts
        surface: dict[int, str] = {}
        for word in sorted(frequency, key=lambda w: (-frequency[w], w)):
            stems = self._word_stems.get(word)
            if stems is None:
                stems = self._word_stems[word] = self._analyse(word)
            if word in names or len(stems) != 1 or stems[0] not in self.vocabulary:
                continue
            surface.setdefault(self.vocabulary[stems[0]], word)
        if not surface:
            return np.zeros(0, np.int64), None
        ids = np.fromiter(surface, np.int64, len(surface))
        return ids, self._embed_words(list(surface.values()))

    def _context(self, row: int, term: int) -> tuple[Int64s, Floats]:
        """Level ``row``'s (a window or the session) documents holding ``term``, ascending,
        and their BM25 scores for it: aggregated from the term's turns, kept until the
        index grows (at most about as many entries as the turn level holds)."""
        cached = self._contexts.get((row, term))
        if cached is not None:
            self._contexts.move_to_end((row, term))
            return cached
        start, end = self._indptr[term], self._indptr[term + 1]
        turns, counts = self._postings[start:end], self._posting_counts[start:end]
        if row == len(LEVELS) - 1:
            documents, norm = len(self.session_dates), self._session_norm
            reached, weights = self.sessions[turns], counts
            ordered = self._ordered  # the sessions of ascending turns ascend too
        else:
            documents = self.size
            radius = _RADII[row - 1]
            norm = self._window_norm[radius]
            offsets = [offset for offset in range(-radius, radius + 1) if offset]
            reached = np.concatenate([turns, *(self._neighbours[o][turns] for o in offsets)])
            valid = reached >= 0
            reached, weights = reached[valid], np.tile(counts, len(offsets) + 1)[valid]
            ordered = False
        # The counts are whole numbers: they sum exactly in any order.
        if not ordered and len(reached) * 10 >= documents:
            per_document = _sum_at(reached, weights, documents)  # dense: cheaper than a sort
            docs = per_document.nonzero()[0]
            tf = per_document[docs]
        else:
            if not ordered:
                # One sorted run per offset: a stable sort merges them in linear time.
                order = reached.argsort(kind="stable")
                reached, weights = reached[order], weights[order]
            first = np.flatnonzero(np.diff(reached, prepend=-1))
            docs = reached[first]
            tf = np.add.reduceat(weights, first) if len(first) else weights[:0]
        idf = _idf(documents, len(docs))
        scored = (docs, idf * tf / (tf + norm[docs]))
        self._contexts[(row, term)] = scored
        self._context_entries += len(docs)
        while self._context_entries > len(self._postings) and len(self._contexts) > 1:
            _, (dropped, _) = self._contexts.popitem(last=False)
            self._context_entries -= len(dropped)
        return scored

    def _bm25_sum(
        self, row: int, ids: Sequence[int], weights: Sequence[float] | None = None
    ) -> NDArray[np.float64]:
        """Per document of level ``row``, the sum of the BM25 scores of terms ``ids``.

        ``ids`` is not empty; with ``weights``, each term's score counts its weight times.
        The sum runs over the terms in the order given, as a column sum of a level's
        (documents x terms) matrix would.
        """
        if row == 0:
            terms = np.asarray(ids, dtype=np.int64)
            starts = self._indptr[terms]
            found = self._indptr[terms + 1] - starts
            entries = _ranges(starts, found)
            docs, tf = self._postings[entries], self._posting_counts[entries]
            slot = np.repeat(np.arange(len(terms)), found)  # the entry's place in ``ids``
            partial = self._turn_idf[terms][slot] * tf / (tf + self._turn_norm[docs])
            if weights is not None:
                partial = np.asarray(weights)[slot] * partial
            return _sum_at(docs, partial, self.size)
        scored = [self._context(row, term) for term in ids]
        docs = np.concatenate([found for found, _ in scored])
        if weights is None:
            partial = np.concatenate([scores for _, scores in scored])
        else:
            partial = np.concatenate(
                [w * scores for w, (_, scores) in zip(weights, scored, strict=True)]
            )
        documents = len(self.session_dates) if row == len(LEVELS) - 1 else self.size
        return _sum_at(docs, partial, documents)

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

        For inspection and export: :meth:`propagate` never builds them (``membership``'s
        entries grow with the square of a session's length, ``entity``'s with the square
        of an entity's turns).
        """
        size = self.size
        rows = np.arange(size)
        membership = sp.csr_array(
            (np.ones(size), (self.sessions, rows)), shape=(len(self.session_dates), size)
        )
        same_session = sp.csr_array(membership.T @ membership) - sp.eye_array(size, format="csr")
        before, after = self._neighbours[-1], self._neighbours[1]
        has_before, has_after = before >= 0, after >= 0
        temporal = sp.csr_array(
            (
                np.ones(int(has_before.sum() + has_after.sum())),
                (
                    np.concatenate([rows[has_before], rows[has_after]]),
                    np.concatenate([before[has_before], after[has_after]]),
                ),
            ),
            shape=(size, size),
        )
        questions = self._answered.nonzero()[0]
        qa = sp.csr_array((np.ones(len(questions)), (questions + 1, questions)), shape=(size, size))
        incidence = sp.csr_array(
            (
                np.sqrt(self._entity_weight[self._turn_entities]),
                self._turn_entities,
                self._turn_entity_indptr,
            ),
            shape=(size, len(self._entity_weight)),
        )
        shared = sp.coo_array(incidence @ incidence.T)
        across = self.sessions[shared.row] != self.sessions[shared.col]
        entity = sp.csr_array(
            (shared.data[across], (shared.row[across], shared.col[across])), shape=(size, size)
        )
        graphs = {
            "temporal": temporal,
            "membership": same_session,
            "qa": qa,
            "entity": entity,
            "semantic": self._semantic_graph(),
        }
        for graph in graphs.values():
            graph.eliminate_zeros()
        return graphs

    def propagate(
        self, seeds: NDArray[np.float64], types: Collection[str] = EDGE_TYPES
    ) -> NDArray[np.float64]:
        """(edge types x ...) the activation each edge type spreads from ``seeds`` (... x turns).

        Only the edge types in ``types`` (rows in :data:`EDGE_TYPES` order); see :meth:`spread`.
        """
        flat = seeds.reshape(-1, self.size)
        query, turn = flat.nonzero()
        spread = self.spread(query, turn, flat[query, turn], len(flat), types)
        return spread.reshape(len(spread), *seeds.shape)

    def spread(
        self,
        query: Int64s,
        turn: Int64s,
        value: Floats,
        queries: int,
        types: Collection[str] = EDGE_TYPES,
    ) -> NDArray[np.float64]:
        """(edge types x queries x turns) what each edge type spreads from the seeds.

        Seed ``i`` is turn ``turn[i]`` of query ``query[i]`` with activation
        ``value[i]``; only the edge types in ``types``, in :data:`EDGE_TYPES` order.
        Each costs what the seeds' neighbourhoods hold, not what the graphs hold.
        """
        size = self.size
        spread = []
        for name in EDGE_TYPES:
            if name not in types:
                continue
            if name == "membership":
                sessions = len(self.session_dates)
                sums = _sum_at(
                    query * sessions + self.sessions[turn],
                    value,
                    queries * sessions,
                ).reshape(queries, sessions)
                in_session = sums[:, self.sessions]
                in_session[query, turn] -= value  # a turn sends nothing to itself
                spread.append(in_session * self._per_neighbour)
                continue
            if name == "semantic":
                if self._semantic_knn is None:
                    spread.append(np.zeros((queries, size)))
                else:
                    flat = np.zeros((queries, size))
                    flat[query, turn] = value
                    spread.append((self._semantic_spread @ flat.T).T)
                continue
            if name == "qa":
                asked = self._answered[turn]
                receivers = [(query[asked], turn[asked] + 1, value[asked])]
            elif name == "temporal":
                scale = self._temporal_scale
                receivers = []
                for offset in (1, -1):  # the earlier neighbour's contribution first
                    neighbour = self._neighbours[-offset][turn]
                    has = neighbour >= 0
                    reached = neighbour[has]
                    receivers.append(
                        (query[has], reached, scale[reached] * scale[turn[has]] * value[has])
                    )
            else:
                receivers = [self._entity_receivers(query, turn, value)]
            to_query = np.concatenate([q for q, _, _ in receivers])
            to_turn = np.concatenate([t for _, t, _ in receivers])
            amount = np.concatenate([a for _, _, a in receivers])
            received = _sum_at(to_query * size + to_turn, amount, queries * size).reshape(
                queries, size
            )
            if name == "entity":
                received *= self._entity_scale
            spread.append(received)
        if not spread:
            return np.zeros((0, queries, size))
        return np.stack(spread)

    def _entity_receivers(
        self, query: Int64s, turn: Int64s, value: Floats
    ) -> tuple[Int64s, Int64s, Floats]:
        """What each seed sends along its entities: (query, receiving turn, amount before
        the receiver's ``1 / sqrt(degree)``), to the turns of other sessions only."""
        starts = self._turn_entity_indptr[turn]
        counts = self._turn_entity_indptr[turn + 1] - starts
        entity = self._turn_entities[_ranges(starts, counts)]
        sent = np.repeat(value * self._entity_scale[turn], counts) * self._entity_weight[entity]
        source_session = np.repeat(self.sessions[turn], counts)
        source_query = np.repeat(query, counts)
        starts = self._entity_turn_indptr[entity]
        counts = self._entity_turn_indptr[entity + 1] - starts
        reached = self._entity_turns[_ranges(starts, counts)]
        across = self.sessions[reached] != np.repeat(source_session, counts)
        return (
            np.repeat(source_query, counts)[across],
            reached[across],
            np.repeat(sent, counts)[across],
        )

    def reach(self, verbosity: float) -> NDArray[np.float64]:
        """``terseness ** verbosity``, per turn (computed once per value until the index grows)."""
        reach = self._reach.get(verbosity)
        if reach is None:
            reach = self._reach[verbosity] = self.terseness**verbosity
            reach.flags.writeable = False  # shared by every query
        return reach

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


def _symmetric_normalised(matrix: Any) -> Any:
    """``D^-1/2 A D^-1/2`` with D the row sums: what spreads activation along the edges."""
    degree = np.asarray(matrix.sum(axis=1)).ravel()
    scale = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=scale, where=degree > 0)
    return sp.csr_array(sp.diags_array(scale) @ matrix @ sp.diags_array(scale))


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
    query, turn, value = _seed_entries(base, count)
    seeded = np.zeros_like(base)
    seeded[query, turn] = value
    return seeded


def _seed_entries(base: NDArray[np.float64], count: int) -> tuple[Int64s, Int64s, Floats]:
    """``(query, turn, score)`` of each row's ``count`` best positive scores (all, if fewer)."""
    rows: list[tuple[Int64s, Int64s]] = []
    for query, row in enumerate(base):
        positive = row.nonzero()[0]  # scores are >= 0: a 0 spreads nothing
        if len(positive) > count:
            scores = row[positive]
            best = np.argpartition(-scores, count - 1)[:count]
            if np.count_nonzero(scores >= scores[best].min()) > count:
                # A tie at the cut: keep the ones a partition of the whole row keeps, as
                # the rankings measured and published were made that way.
                positive = np.argpartition(-row, count - 1)[:count]
            else:
                positive = positive[best]
        rows.append((np.full(len(positive), query), positive))
    query_of = np.concatenate([q for q, _ in rows]) if rows else np.zeros(0, np.int64)
    turn_of = np.concatenate([t for _, t in rows]) if rows else np.zeros(0, np.int64)
    return query_of, turn_of, base[query_of, turn_of]


def final_scores(
    index: Index,
    levels: NDArray[np.float64],
    cue: NDArray[np.float64] | None,
    named: NDArray[np.float64] | None,
    weights: HiMGAWeights,
    dense: NDArray[np.float64] | None = None,
    expanded: NDArray[np.float64] | None = None,
    addressed: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """(queries x turns) HiMGA scores.

    ``cue`` (queries x turns) is 0 where no date cue, ``named`` 1 where the query
    names the turn's speaker (:meth:`Index.named_speakers`), else 0; ``None``
    stands for all 0 (and skips the product by 1). What a turn
    receives along the edges counts ``terseness ** verbosity`` times, as its context.
    ``addressed`` (queries x turns, :meth:`Index.addressed`) is 1 where the query
    asks what "you" said and the turn is the assistant's: such a turn counts as
    named, and its context and what it receives count in full, undamped -- the
    damping bets that the verbose side's replies echo a question rather than
    answer it, and this query says the answer is the verbose side's.
    """
    reach = index.reach(weights.verbosity)
    if addressed is not None:
        reach = np.where(addressed > 0, 1.0, reach)
        named = addressed if named is None else np.maximum(named, addressed)
    base = base_scores(levels, weights, reach, dense, expanded)
    edge_weights = np.array([getattr(weights, name) for name in EDGE_TYPES])
    active = edge_weights > 0  # an edge type weighted 0 adds exactly 0: not spread at all
    spread = index.spread(
        *_seed_entries(base, weights.seeds),
        len(base),
        [n for n, on in zip(EDGE_TYPES, active, strict=True) if on],
    )
    received = np.tensordot(edge_weights[active], spread, axes=1) * reach
    final: NDArray[np.float64] = base + received
    if cue is not None:
        final = final * (1.0 + weights.date * cue)
    if named is not None:
        final = final * (1.0 + weights.speaker * named)
    return final

"""The BM25 baseline: turn-level Okapi BM25 (Lucene variant) over bm25s."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from himga._extras import require
from himga.memory._ranking import LazilyIndexedTurns, top_k
from himga.memory._text import ENGLISH_STOPWORDS, words

__all__ = ["BM25Memory"]

_PURPOSE = "BM25Memory"


class BM25Memory(LazilyIndexedTurns):
    """Turn-level BM25 retrieval: the ``k`` turns that best match the query.

    Every message is one document, ``"<speaker>: <content>"``, analysed into
    words (NFKC, case-folded, split at punctuation and whitespace), minus
    English stopwords, Snowball-stemmed (PyStemmer). Scoring is bm25s's Lucene
    BM25 (``k1``, ``b``) on its numpy backend. ``retrieve`` returns the top
    ``k`` turns re-ordered chronologically, one
    ``"[<session date>] <speaker>: <content>"`` line each; turns sharing no
    term with the query are never returned, so a query without content words
    (empty, punctuation, stopwords, emoji) retrieves ``""``.

    Indexing is lazy: ``ingest`` appends in O(1) and marks the index stale; the
    first ``retrieve`` or ``search`` after new ingests rebuilds it once (words
    of earlier turns are analysed only once). Ingest everything, then query.

    Needs the ``bm25`` extra (bm25s, PyStemmer, numpy), imported on construction.
    """

    def __init__(self, k: int = 10, *, k1: float = 1.5, b: float = 0.75) -> None:
        if k < 1:
            raise ValueError(f"BM25Memory: k must be >= 1, got {k}")
        if not 0 <= k1 < math.inf:  # also rejects NaN, which would score every turn NaN
            raise ValueError(f"BM25Memory: k1 must be a finite number >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"BM25Memory: b must be in [0, 1], got {b}")
        self.k = k
        self.k1 = k1
        self.b = b
        self._bm25s: ModuleType = require("bm25s", extra="bm25", purpose=_PURPOSE)
        self._np: ModuleType = require("numpy", extra="bm25", purpose=_PURPOSE)
        stemmer_module = require("Stemmer", extra="bm25", purpose=_PURPOSE)
        # One stemmer per instance: PyStemmer keeps a cache, which must not be shared.
        self._stem_words = stemmer_module.Stemmer("english").stemWords
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return f"BM25Memory(k={self.k}, k1={self.k1}, b={self.b})"

    def reset(self) -> None:
        """Forget every turn and drop the index."""
        self._turn_ids: list[str | None] = []
        self._lines: list[str] = []
        # The dirty flag: documents ingested since the last rebuild, not yet analysed.
        self._unindexed: list[str] = []
        self._terms: list[list[str]] = []  # the analysed documents of the earlier turns
        self._index: Any = None  # bm25s.BM25, None when no document has a term
        self._indptr: list[int] = []  # the index's column pointers, as Python ints

    def _analyse(self, text: str) -> list[str]:
        kept = [word for word in words(text) if word not in ENGLISH_STOPWORDS]
        stems: list[str] = self._stem_words(kept)
        return stems

    def _rebuild(self) -> None:
        self._terms.extend(self._analyse(document) for document in self._unindexed)
        self._unindexed = []
        if not any(self._terms):
            # bm25s cannot index a corpus without a single term.
            self._index = None
            return
        index = self._bm25s.BM25(k1=self.k1, b=self.b, method="lucene", backend="numpy")
        index.index(self._terms, show_progress=False)
        self._index = index
        self._indptr = index.scores["indptr"].tolist()

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        """``(position, score)`` of the best ``k`` turns with a positive score, best first."""
        if self._unindexed:
            self._rebuild()
        if self._index is None or k < 1:
            return []
        vocabulary = self._index.vocab_dict
        term_ids = [vocabulary[term] for term in self._analyse(query) if term in vocabulary]
        if not term_ids:
            return []
        # BM25 scores are >= 0: the positive ones are the turns sharing a term.
        return top_k(self._np, self._scores(term_ids), k, positive=True)

    def _scores(self, term_ids: list[int]) -> Any:
        """The BM25 score of every turn for the query terms ``term_ids`` (numpy float64)."""
        # bm25s's eager index holds, per term, the turns containing it and their partial
        # scores (a CSC matrix in ``scores``). Summing the query terms' columns with one
        # bincount is several times faster than bm25s.get_scores_from_ids, whose per-term
        # np.add.at loop dominates query latency on conversation-sized corpora.
        np = self._np
        matrix = self._index.scores
        indices, data, indptr = matrix["indices"], matrix["data"], self._indptr
        spans = [(indptr[term], indptr[term + 1]) for term in term_ids]
        turns = np.concatenate([indices[start:end] for start, end in spans])
        partial = np.concatenate([data[start:end] for start, end in spans])
        return np.bincount(turns, weights=partial, minlength=matrix["num_docs"])

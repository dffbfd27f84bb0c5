"""The vectors MAGMA compares turns and queries with: a lexical TF-IDF space, or an embedder.

The released code embeds keyword-enriched text with MiniLM (all-MiniLM-L6-v2).
Offline and by default this reproduction uses TF-IDF over the conversation's own
words instead -- no model, deterministic, but lexical: cosines run lower than
MiniLM's, so the thresholds borrowed from the released code (similar-to > 0.5,
traversal 0.10-0.30) prune more. Any object with ``embed(texts, kind)`` returning
L2-normalised rows (``himga.embed.Embedder``) replaces it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.memory._text import ENGLISH_STOPWORDS, words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from himga.embed import Embedder

__all__ = ["VectorSpace"]


def numpy() -> Any:
    """numpy, or a clear error naming the ``magma`` extra."""
    return require("numpy", extra="magma", purpose="MagmaMemory")


def _terms(text: str) -> list[str]:
    return [w for w in words(text) if w not in ENGLISH_STOPWORDS]


class VectorSpace:
    """Row-normalised vectors of the node texts, and of queries in the same space."""

    def __init__(self, embedder: Embedder | None) -> None:
        self._np = numpy()
        self.embedder = embedder
        self._embedded: list[NDArray[np.float32]] = []  # embedder rows of the texts so far
        self._vocabulary: dict[str, int] = {}
        self._idf: Any = None

    @property
    def name(self) -> str:
        """What the vectors are, for the memory's repr."""
        return "tfidf" if self.embedder is None else self.embedder.model_id

    def fit(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The vectors of ``texts`` (the whole conversation so far, in order)."""
        np = self._np
        if self.embedder is not None:
            new = texts[len(self._embedded) :]
            if new:
                self._embedded.extend(self.embedder.embed(list(new), "passage"))
            rows = self._embedded[: len(texts)]
            if not rows:
                return np.zeros((0, 1), dtype=np.float32)  # type: ignore[no-any-return]
            return np.asarray(rows, dtype=np.float32)  # type: ignore[no-any-return]
        documents = [Counter(_terms(text)) for text in texts]
        frequency: Counter[str] = Counter()
        for counts in documents:
            frequency.update(counts.keys())
        self._vocabulary = {term: i for i, term in enumerate(sorted(frequency))}
        n = len(documents)
        self._idf = np.array(
            [math.log((1 + n) / (1 + frequency[t])) + 1 for t in sorted(frequency)],
            dtype=np.float32,
        )
        matrix = np.zeros((n, max(1, len(self._vocabulary))), dtype=np.float32)
        for row, counts in enumerate(documents):
            for term, count in counts.items():
                matrix[row, self._vocabulary[term]] = 1 + math.log(count)
        return self._normalised(matrix)

    def query(self, text: str) -> NDArray[np.float32]:
        """The vector of a query (all zeros when it shares no term with the conversation)."""
        np = self._np
        if self.embedder is not None:
            rows = self.embedder.embed([text], "query")
            return rows[0]  # type: ignore[no-any-return]
        vector = np.zeros((1, max(1, len(self._vocabulary))), dtype=np.float32)
        for term, count in Counter(_terms(text)).items():
            if term in self._vocabulary:
                vector[0, self._vocabulary[term]] = 1 + math.log(count)
        return self._normalised(vector)[0]  # type: ignore[no-any-return]

    def _normalised(self, matrix: Any) -> NDArray[np.float32]:
        np = self._np
        if self._idf is not None and matrix.shape[1] == len(self._idf):
            matrix = matrix * self._idf
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)  # type: ignore[no-any-return]

    def reset(self) -> None:
        """Forget every text."""
        self._embedded = []
        self._vocabulary = {}
        self._idf = None

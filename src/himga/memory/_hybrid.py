"""Hybrid retrieval: BM25 and dense rankings of every turn, fused."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from himga.data.schema import Message, Session
from himga.memory._ann import ANN_MIN_TURNS, EF_SEARCH, Search
from himga.memory._bm25 import BM25Memory
from himga.memory._dense import DenseMemory
from himga.memory._embedder import DEFAULT_EMBEDDER, EmbedsByDefault
from himga.memory._protocol import EmbedReport, Hit
from himga.memory._ranking import top_k

if TYPE_CHECKING:
    from himga.embed import Embedder

__all__ = ["HybridMemory"]

Fusion = Literal["rrf", "score"]

# With search="ann": how many turns each part proposes (at least the hits asked for),
# and how many evenly spaced turns join them so that the cosines' minimum, which scales
# the dense scores, is near the one over every turn.
_CANDIDATES = 100
_SPREAD = 1024


class HybridMemory(EmbedsByDefault):
    """Turn-level fusion of a :class:`BM25Memory` and a :class:`DenseMemory`.

    Both rank every turn they hold; the rankings are fused over all turns (exact,
    no candidate cut-off):

    * ``fusion="rrf"`` -- weighted reciprocal rank fusion (Cormack et al.,
      2009): a turn at 1-based rank ``r_d`` among dense scores and ``r_b`` among the
      turns BM25 matches scores ``weight / (rrf_k + r_d) + (1 - weight) / (rrf_k + r_b)``,
      the BM25 term 0 for a turn sharing no term with the query;
    * ``fusion="score"`` (default) -- a normalised score sum,
      ``weight * dense' + (1 - weight) * bm25'``, where ``dense'`` is the cosine
      min-max scaled to [0, 1] over the turns and ``bm25'`` the BM25 score divided
      by its maximum (0 for unmatched turns).

    ``weight`` is the dense share (0 is pure BM25 order, 1 pure dense). The default
    fusion was chosen on LoCoMo-10 by leave-one-conversation-out over {RRF, score} x
    weight {0.2, 0.35, 0.5, 0.65} (every fold chose score fusion, weight 0.5; see
    ``docs/memories.md``); ``rrf_k=60`` is the literature's.

    ``retrieve`` returns the top ``k`` fused turns in conversation order as dated
    lines; ``search`` ranks every turn, best fused score first, ties earlier turn
    first; a blank query finds nothing. Indexing is lazy in both parts. Needs the
    ``bm25`` and ``dense`` extras.

    ``search="ann"`` (the ``ann`` extra; see :class:`DenseMemory`): from
    ``ann_min_turns`` turns on, the fusion runs over candidates only -- the
    ``max(k, 100)`` turns the HNSW graph finds nearest, BM25's ``max(k, 100)``
    best and 1,024 evenly spaced turns (so that the cosines' minimum is near the
    one over every turn) -- with their exact cosines, the min-max scaling and the
    dense ranks taken over those candidates (``ef_search``: the graph's search
    breadth); below ``ann_min_turns``, the exact fusion above.
    """

    def __init__(
        self,
        k: int = 10,
        *,
        embedder: Embedder | str = DEFAULT_EMBEDDER,
        fusion: Fusion = "score",
        weight: float = 0.5,
        rrf_k: float = 60.0,
        k1: float = 1.5,
        b: float = 0.75,
        search: Search = "exact",
        ann_min_turns: int = ANN_MIN_TURNS,
        ef_search: int = EF_SEARCH,
    ) -> None:
        if k < 1:
            raise ValueError(f"HybridMemory: k must be >= 1, got {k}")
        if fusion not in ("rrf", "score"):
            raise ValueError(f"HybridMemory: fusion must be 'rrf' or 'score', got {fusion!r}")
        if not 0 <= weight <= 1:  # also rejects NaN
            raise ValueError(f"HybridMemory: weight must be in [0, 1], got {weight}")
        if not 0 <= rrf_k < math.inf:
            raise ValueError(f"HybridMemory: rrf_k must be a finite number >= 0, got {rrf_k}")
        self.k = k
        self.fusion = fusion
        self.weight = weight
        self.rrf_k = rrf_k
        self._bm25 = BM25Memory(k, k1=k1, b=b)
        self._dense = DenseMemory(
            k, embedder=embedder, search=search, ann_min_turns=ann_min_turns, ef_search=ef_search
        )
        self._np = self._dense._np

    @property
    def embedder(self) -> Embedder:
        return self._dense.embedder

    def report_embedding(self, report: EmbedReport | None, /) -> None:
        """See :meth:`~himga.memory.ReportsEmbedding.report_embedding`: its dense part's."""
        self._dense.report_embedding(report)

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return (
            f"HybridMemory(k={self.k}, embedder={self.embedder.model_id!r}, "
            f"fusion={self.fusion!r}, weight={self.weight}, rrf_k={self.rrf_k}, "
            f"k1={self._bm25.k1}, b={self._bm25.b}{self._search_repr()})"
        )

    def _search_repr(self) -> str:
        # Nothing for the exact search, as before ANN existed: old manifests still match.
        dense = self._dense
        if dense.search_mode == "exact":
            return ""
        return f", search='ann', ann_min_turns={dense.ann_min_turns}{dense._ef_repr()}"

    def ingest(self, message: Message, session: Session, /) -> None:
        """Append the turn to both parts (O(1)); both index at the next query."""
        self._bm25.ingest(message, session)
        self._dense.ingest(message, session)

    def retrieve(self, query: str, /) -> str:
        """The top ``k`` fused turns in conversation order; ``""`` for a blank query."""
        positions = sorted(position for position, _ in self._top(query, self.k))
        lines = self._dense._lines
        return "\n".join(lines[position] for position in positions)

    def search(self, query: str, k: int, /) -> list[Hit]:
        """At most ``k`` turns, best fused score first, equal scores earlier turn first."""
        ids, lines = self._dense._turn_ids, self._dense._lines
        return [
            Hit(ids[position], score, lines[position]) for position, score in self._top(query, k)
        ]

    def reset(self) -> None:
        """Forget every turn in both parts."""
        self._bm25.reset()
        self._dense.reset()

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        if k < 1:
            return []
        if self._dense.approximate():
            return self._top_candidates(query, k)
        dense = self._dense._scores(query)
        if dense is None:
            return []
        lexical = self._bm25._top(query, len(dense))
        return top_k(self._np, self._fuse(dense, lexical), k)

    def _top_candidates(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        """:meth:`_top` fused over the dense graph's and BM25's best turns only."""
        np = self._np
        vector = self._dense._query(query)
        if vector is None:
            return []
        count = max(k, _CANDIDATES)
        nearest, _ = self._dense._nearest(vector, count)
        lexical = self._bm25._top(query, count)
        turns = len(self._dense._matrix)
        spread = np.arange(0, turns, max(1, turns // _SPREAD))
        matched = [position for position, _ in lexical]
        candidates = np.union1d(np.union1d(nearest, matched), spread).astype(np.int64)
        dense = self._dense._matrix[candidates] @ vector
        local = np.searchsorted(candidates, matched)
        fused = self._fuse(dense, list(zip(local.tolist(), (s for _, s in lexical), strict=True)))
        # Candidates ascend by position: ties still go to the earlier turn.
        return [(int(candidates[at]), score) for at, score in top_k(np, fused, k)]

    def _fuse(self, dense: Any, lexical: Sequence[tuple[int, float]]) -> Any:
        np = self._np
        fused = np.zeros(len(dense), dtype=np.float64)
        positions = np.array([position for position, _ in lexical], dtype=np.int64)
        if self.fusion == "rrf":
            ranks = np.empty(len(dense), dtype=np.float64)
            ranks[(-dense).argsort(kind="stable")] = np.arange(1, len(dense) + 1)
            fused += self.weight / (self.rrf_k + ranks)
            if len(positions):
                fused[positions] += (1 - self.weight) / (
                    self.rrf_k + np.arange(1, len(positions) + 1)
                )
            return fused
        low, high = float(dense.min()), float(dense.max())
        if high > low:
            fused += self.weight * (dense - low) / (high - low)
        if len(positions):
            scores = np.array([score for _, score in lexical], dtype=np.float64)
            fused[positions] += (1 - self.weight) * scores / scores.max()
        return fused

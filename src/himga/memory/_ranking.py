"""What the turn-ranking memories share: ``retrieve`` and ``search`` over a ranking, and top-k."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from himga.data.schema import Message, Session
from himga.memory._protocol import Hit
from himga.memory._text import format_line

__all__ = ["LazilyIndexedTurns", "RankedTurns", "top_k"]


class RankedTurns:
    """A memory that ranks its turns: ``search`` and ``retrieve`` from one ``_top``.

    Subclasses keep ``_turn_ids`` and ``_lines`` (one prompt line per turn, in
    conversation order), set ``k`` and define ``_top``.
    """

    k: int
    _turn_ids: list[str | None]
    _lines: list[str]

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` turns' lines in conversation order; ``""`` when nothing matches."""
        positions = sorted(position for position, _ in self._top(query, self.k))
        return "\n".join(self._lines[position] for position in positions)

    def search(self, query: str, k: int, /) -> list[Hit]:
        """At most ``k`` turns, best score first, equal scores earlier turn first."""
        return [
            Hit(self._turn_ids[position], score, self._lines[position])
            for position, score in self._top(query, k)
        ]

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        """``(position, score)`` of the best ``k`` turns, best first, ties earlier first."""
        raise NotImplementedError


class LazilyIndexedTurns(RankedTurns):
    """A ranking memory whose index catches up at the next query: ``ingest`` only appends.

    Subclasses also keep ``_unindexed``, the ``"<speaker>: <content>"`` passages
    ingested since the last query, and index them in ``_top``.
    """

    _unindexed: list[str]

    def ingest(self, message: Message, session: Session, /) -> None:
        """Append the turn (O(1)); it is indexed at the next query."""
        self._turn_ids.append(message.turn_id)
        self._lines.append(format_line(message, session))
        self._unindexed.append(f"{message.role}: {message.content}")


def top_k(
    np: ModuleType, scores: Any, k: int, *, positive: bool = False
) -> list[tuple[int, float]]:
    """``(position, score)`` of the ``k`` highest ``scores``, best first, ties earlier first.

    ``positive``: the scores are >= 0 and only those > 0 count.
    """
    # ndarray methods rather than np.flatnonzero / np.argsort: on a conversation-sized
    # corpus the numpy wrappers' dispatch is a measurable share of a query.
    candidates = scores.nonzero()[0] if positive else np.arange(len(scores))
    best = scores[candidates]
    if k < len(best):
        # Keep every score at least the k-th best, ties included, so the stable
        # sort below breaks ties by position, also at the cut-off.
        kth = np.partition(best, len(best) - k)[len(best) - k]
        keep = best >= kth
        candidates, best = candidates[keep], best[keep]
    order = (-best).argsort(kind="stable")[:k]
    return list(zip(candidates[order].tolist(), best[order].tolist(), strict=True))

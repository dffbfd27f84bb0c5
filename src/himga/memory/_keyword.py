"""The keyword baseline: the most recent turns sharing a word with the query."""

from __future__ import annotations

from dataclasses import dataclass

from himga.data.schema import Message, Session
from himga.memory._protocol import Hit
from himga.memory._text import ENGLISH_STOPWORDS, format_line, words

__all__ = ["KeywordMemory"]


def _keywords(text: str) -> frozenset[str]:
    return frozenset(words(text)) - ENGLISH_STOPWORDS


@dataclass(frozen=True, slots=True)
class _Turn:
    turn_id: str | None
    line: str
    keywords: frozenset[str]


class KeywordMemory:
    """The seed's keyword memory made robust.

    A turn matches a query when its content shares at least one keyword with
    it. Keywords are the words of :func:`himga.memory._text.words` (NFKC,
    case-folded, split at punctuation and whitespace) minus English stopwords,
    so ``"Paris!"`` matches ``"paris"`` and ``"what"`` matches nothing.
    ``retrieve`` returns the ``k`` most recent matching turns, in conversation
    order, one ``"[<session date>] <speaker>: <content>"`` line each.

    :meth:`search` ranks the matching turns most recent first; a hit's
    ``score`` is the turn's 1-based position in the history (later is higher),
    so scores decrease along the ranking.
    """

    def __init__(self, k: int = 10) -> None:
        if k < 1:
            raise ValueError(f"KeywordMemory: k must be >= 1, got {k}")
        self.k = k
        self._turns: list[_Turn] = []

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return f"KeywordMemory(k={self.k})"

    def ingest(self, message: Message, session: Session, /) -> None:
        """Store the turn and its keywords."""
        self._turns.append(
            _Turn(message.turn_id, format_line(message, session), _keywords(message.content))
        )

    def retrieve(self, query: str, /) -> str:
        """The ``k`` most recent matching lines, oldest first; ``""`` when none match."""
        hits = self.search(query, self.k)
        return "\n".join(hit.text for hit in reversed(hits))

    def search(self, query: str, k: int, /) -> list[Hit]:
        """At most ``k`` matching turns, most recent first; ``[]`` when none match."""
        wanted = _keywords(query)
        hits: list[Hit] = []
        if not wanted or k < 1:
            return hits
        for position in range(len(self._turns) - 1, -1, -1):
            turn = self._turns[position]
            if not wanted.isdisjoint(turn.keywords):
                hits.append(Hit(turn.turn_id, float(position + 1), turn.line))
                if len(hits) == k:
                    break
        return hits

    def reset(self) -> None:
        """Forget every turn."""
        self._turns = []

"""The full-context baseline: the whole history, in order."""

from __future__ import annotations

from himga.data.schema import Message, Session
from himga.memory._text import format_line

__all__ = ["FullContextMemory"]


def _approx_tokens(text: str) -> int:
    """One token per 4 characters, rounded up."""
    return -(-len(text) // 4)


class FullContextMemory:
    """Returns everything ingested, one line per message, whatever the query.

    Each line is ``"[<session date>] <speaker>: <content>"`` (no bracket when the
    session has no date), in ingestion order, joined by newlines. With
    ``max_tokens`` set, only the most recent lines whose total approximate
    token count fits the budget are kept; if the latest line alone exceeds it,
    ``retrieve`` returns ``""``. No tokenizer is loaded: a line costs one token
    per 4 characters, rounded up, plus one for its newline (the usual rule of
    thumb for English BPE tokenizers, so the budget is a size guard, not an
    exact model limit).

    The "full-context" baseline of the MAGMA and mem0 tables. It does not rank,
    so it is not a :class:`~himga.memory.SearchableMemory`.
    """

    def __init__(self, max_tokens: int | None = None) -> None:
        if max_tokens is not None and max_tokens < 0:
            raise ValueError(f"FullContextMemory: max_tokens must be >= 0, got {max_tokens}")
        self.max_tokens = max_tokens
        self._lines: list[str] = []
        self._context: str | None = None  # cached retrieve() result, None when stale

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return f"FullContextMemory(max_tokens={self.max_tokens})"

    def ingest(self, message: Message, session: Session, /) -> None:
        """Append the message's line (O(1))."""
        self._lines.append(format_line(message, session))
        self._context = None

    def retrieve(self, query: str, /) -> str:
        """The history (or its most recent part within ``max_tokens``); ``query`` is ignored."""
        if self._context is None:
            self._context = "\n".join(self._budgeted_lines())
        return self._context

    def reset(self) -> None:
        """Forget every line."""
        self._lines = []
        self._context = None

    def _budgeted_lines(self) -> list[str]:
        if self.max_tokens is None:
            return self._lines
        kept = 0
        used = 0
        for line in reversed(self._lines):
            used += _approx_tokens(line) + 1  # the newline joining it to the next line
            if used > self.max_tokens:
                break
            kept += 1
        return self._lines[len(self._lines) - kept :]

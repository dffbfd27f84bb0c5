"""Token totals across the calls of one client, safe to update from many threads."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["TokenUsage", "UsageCounter"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Totals at one moment: successful ``calls`` with their tokens, and ``failed_calls``."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failed_calls: int = 0


class UsageCounter:
    """Accumulates :class:`TokenUsage`; every method is atomic."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = TokenUsage()

    def add_call(self, input_tokens: int, output_tokens: int) -> None:
        """Count one successful call and its tokens."""
        with self._lock:
            u = self._usage
            self._usage = TokenUsage(
                u.calls + 1,
                u.input_tokens + input_tokens,
                u.output_tokens + output_tokens,
                u.failed_calls,
            )

    def add_failure(self) -> None:
        """Count one call that raised."""
        with self._lock:
            u = self._usage
            self._usage = TokenUsage(u.calls, u.input_tokens, u.output_tokens, u.failed_calls + 1)

    def snapshot(self) -> TokenUsage:
        """The totals so far."""
        with self._lock:
            return self._usage

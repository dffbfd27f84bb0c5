"""Token totals across the calls of one client, safe to update from many threads."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["TokenUsage", "UsageCounter", "reported_count"]


def reported_count(value: object) -> int | None:
    """A token count as a server reported it, ``None`` when it did not say: gateways and
    local servers send ``usage`` with ``null`` counts (or none at all)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Totals at one moment: successful ``calls`` with their tokens, ``failed_calls``, and
    ``unmetered_calls``, the successful calls whose server reported no token counts
    (counted as 0 tokens in the totals, so the totals are a lower bound when it is > 0)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failed_calls: int = 0
    unmetered_calls: int = 0


class UsageCounter:
    """Accumulates :class:`TokenUsage`; every method is atomic."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = TokenUsage()

    def add_call(self, input_tokens: int, output_tokens: int, *, metered: bool = True) -> None:
        """Count one successful call and its tokens (``metered=False``: its server reported
        none, and ``input_tokens`` / ``output_tokens`` are 0)."""
        with self._lock:
            u = self._usage
            self._usage = TokenUsage(
                u.calls + 1,
                u.input_tokens + input_tokens,
                u.output_tokens + output_tokens,
                u.failed_calls,
                u.unmetered_calls + (not metered),
            )

    def add_failure(self) -> None:
        """Count one call that raised."""
        with self._lock:
            u = self._usage
            self._usage = TokenUsage(
                u.calls, u.input_tokens, u.output_tokens, u.failed_calls + 1, u.unmetered_calls
            )

    def snapshot(self) -> TokenUsage:
        """The totals so far."""
        with self._lock:
            return self._usage

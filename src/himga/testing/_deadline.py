"""The kit's per-call deadline: memories whose every call returns in time or stops the check."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from himga.data.schema import Message, Session
from himga.eval._memory_calls import GuardedMemory, MemoryCallFailed, MemoryCallTimeout
from himga.memory._protocol import Hit, SearchableMemory
from himga.testing._contracts import ContractViolation

__all__ = ["MemoryHung", "with_deadline"]


class MemoryHung(BaseException):
    """A memory call did not return within the kit's deadline.

    A ``BaseException``, like ``KeyboardInterrupt``: Hypothesis neither catches
    nor replays it (each replay would wait the deadline out again), and the
    harness lets it through, so the check stops at the first hang. The harness
    sets ``violation`` (the contract and the calls so far) when the hung call was
    one of its program's.
    """

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(
            f"{method} did not return within {timeout:g} s (MemoryCallTimeout: it hangs, "
            f"or is slower than the per-call deadline)"
        )
        self.method = method
        self.violation: ContractViolation | None = None


class _Timed:
    """``memory`` with a deadline on each call: results and exceptions pass through
    unchanged, so the kit judges them as it would the bare memory's."""

    def __init__(self, memory: Any, timeout: float) -> None:
        self._guard = GuardedMemory(memory, timeout)
        self._timeout = timeout

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return self._guard.call(method, *args)
        except MemoryCallFailed as failed:
            if isinstance(failed.error, MemoryCallTimeout):
                raise MemoryHung(method, self._timeout) from None
            raise failed.error from None

    def ingest(self, message: Message, session: Session, /) -> None:
        self._call("ingest", message, session)

    def retrieve(self, query: str, /) -> Any:
        return self._call("retrieve", query)

    def reset(self) -> None:
        self._call("reset")


class _TimedSearchable(_Timed):
    """A :class:`_Timed` searchable memory: it has ``search`` only when the memory has."""

    def search(self, query: str, k: int, /) -> list[Hit]:
        found: list[Hit] = self._call("search", query, k)
        return found


def with_deadline(factory: Callable[[], Any], timeout: float) -> Callable[[], Any]:
    """``factory``, its memories' every call limited to ``timeout`` seconds
    (:class:`MemoryHung` past it); the instances are searchable when the memory is."""

    def make() -> _Timed:
        memory = factory()
        timed = _TimedSearchable if isinstance(memory, SearchableMemory) else _Timed
        return timed(memory, timeout)

    # The kit names the factory in its reproducers: the user's, not this wrapper.
    return functools.update_wrapper(make, factory, updated=())

"""Pre-flight: prove a memory's shape and a quick pass of the conformance kit before a run."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from himga._extras import MissingExtraError, require
from himga.data.schema import Message, Session
from himga.eval._memory_calls import GuardedMemory, MemoryCallFailed
from himga.memory import ResolvedMemory
from himga.testing import CONTRACTS, check_protocol_shape

__all__ = ["PREFLIGHT_EXAMPLES", "PreflightReport", "preflight"]

#: Generated call sequences per behavioural contract: about 0.3 s for the reference memories.
PREFLIGHT_EXAMPLES = 20
PROTOCOL_SHAPE = "protocol-shape"


@dataclass(frozen=True, slots=True)
class PreflightReport:
    """What pre-flight checked and found.

    ``checked`` lists the contract ids that passed; ``failed`` the first one
    broken (with ``problem`` and the shrunk ``reproducer``), ``None`` if none;
    ``limited`` says why only ``protocol-shape`` could run (the kit's
    behavioural contracts need the ``testing`` extra).
    """

    checked: tuple[str, ...]
    failed: str | None
    problem: str
    reproducer: str
    limited: str | None
    seconds: float

    def describe(self) -> dict[str, Any]:
        """JSON-ready, for the run manifest."""
        return {
            "checked": list(self.checked),
            "failed": self.failed,
            "limited": self.limited,
            "max_examples": PREFLIGHT_EXAMPLES,
            "seconds": round(self.seconds, 3),
        }


def preflight(memory: ResolvedMemory, *, timeout: float | None) -> PreflightReport:
    """Check ``memory``: ``protocol-shape`` from signatures, then every behavioural contract
    of :data:`himga.testing.CONTRACTS` with :data:`PREFLIGHT_EXAMPLES` deterministic
    examples each, stopping at the first violation. With ``timeout`` every memory
    call the kit makes is limited to that many seconds, so a hanging call fails
    pre-flight instead of hanging it. Without Hypothesis only ``protocol-shape`` runs.
    """
    started = time.perf_counter()
    target: Any = memory.factory if isinstance(memory.factory, type) else memory.create()
    problems = check_protocol_shape(target)
    if problems:
        problem = "; ".join(problems)
        return PreflightReport((), PROTOCOL_SHAPE, problem, "", None, time.perf_counter() - started)
    try:
        require("hypothesis", extra="testing", purpose="pre-flight's behavioural contracts")
    except MissingExtraError as exc:
        elapsed = time.perf_counter() - started
        return PreflightReport((PROTOCOL_SHAPE,), None, "", "", str(exc), elapsed)
    # Loaded only now: they need Hypothesis, which the lines above just found.
    from himga.testing import ContractViolation, check_contract

    factory = memory.factory if timeout is None else _timed(memory.factory, timeout)
    checked: list[str] = [PROTOCOL_SHAPE]
    for contract in CONTRACTS:
        if contract.id == PROTOCOL_SHAPE:
            continue
        try:
            check_contract(factory, contract.id, max_examples=PREFLIGHT_EXAMPLES, derandomize=True)
        except ContractViolation as violation:
            return PreflightReport(
                tuple(checked),
                violation.contract_id,
                violation.problem,
                violation.reproducer,
                None,
                time.perf_counter() - started,
            )
        checked.append(contract.id)
    return PreflightReport(tuple(checked), None, "", "", None, time.perf_counter() - started)


class _TimedMemory:
    """A memory whose every call returns within ``timeout`` seconds or raises
    :class:`~himga.eval._memory_calls.MemoryCallTimeout`; results and exceptions pass
    through unchanged, so the kit judges them as it would the bare memory."""

    def __init__(self, memory: Any, timeout: float) -> None:
        self._guard = GuardedMemory(memory, timeout)

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return self._guard.call(method, *args)
        except MemoryCallFailed as failed:
            raise failed.error from None

    def ingest(self, message: Message, session: Session, /) -> None:
        self._call("ingest", message, session)

    def retrieve(self, query: str, /) -> Any:
        return self._call("retrieve", query)

    def reset(self) -> None:
        self._call("reset")


def _timed(factory: Callable[[], Any], timeout: float) -> Callable[[], Any]:
    def make() -> _TimedMemory:
        return _TimedMemory(factory(), timeout)

    # The kit names the factory in its reproducers: the user's, not this wrapper.
    return functools.update_wrapper(make, factory, updated=())

"""Pre-flight: prove a memory's shape and a quick pass of the conformance kit before a run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from himga._extras import MissingExtraError, require
from himga.memory import ResolvedMemory
from himga.testing import CONTRACTS, KIT_MEMORY_TIMEOUT, check_protocol_shape

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
    examples each, stopping at the first violation. Every memory call the kit makes
    is limited to ``timeout`` seconds, and never more than the kit's own
    :data:`~himga.testing.KIT_MEMORY_TIMEOUT` (its conversations are a few turns), so
    a hanging call fails pre-flight instead of hanging it. Without Hypothesis only
    ``protocol-shape`` runs.
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

    deadline = KIT_MEMORY_TIMEOUT if timeout is None else min(timeout, KIT_MEMORY_TIMEOUT)
    checked: list[str] = [PROTOCOL_SHAPE]
    for contract in CONTRACTS:
        if contract.id == PROTOCOL_SHAPE:
            continue
        try:
            check_contract(
                memory.factory,
                contract.id,
                max_examples=PREFLIGHT_EXAMPLES,
                derandomize=True,
                timeout=deadline,
            )
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

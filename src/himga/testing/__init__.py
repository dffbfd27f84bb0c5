"""The conformance kit: prove that a memory honours :class:`~himga.memory.BaseMemory`.

The contract catalogue (:data:`CONTRACTS`, :class:`Contract`,
:class:`ContractViolation`, :data:`DEFAULT_MAX_EXAMPLES`) and the signature check
:func:`check_protocol_shape` import without Hypothesis. Everything that generates
call sequences (``check_memory``, ``check_contract``, ``MemoryContract``, the
state machine, the strategies) needs the ``testing`` extra: looking one up
without Hypothesis installed raises :class:`~himga._extras.MissingExtraError`
saying ``pip install 'himga[testing]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from himga._extras import require
from himga._lazy import lazy_names
from himga.testing._contracts import (
    CONTRACTS,
    DEFAULT_MAX_EXAMPLES,
    EMBED_TEXT_CHARS,
    KIT_MEMORY_TIMEOUT,
    Contract,
    ContractViolation,
    check_protocol_shape,
)

if TYPE_CHECKING:
    from himga.testing._check import check_contract, check_memory
    from himga.testing._pytest import MemoryContract
    from himga.testing._stateful import MemoryStateMachine, memory_state_machine
    from himga.testing._strategies import blank_texts, messages, queries, sessions, texts

__all__ = [
    "CONTRACTS",
    "DEFAULT_MAX_EXAMPLES",
    "EMBED_TEXT_CHARS",
    "KIT_MEMORY_TIMEOUT",
    "Contract",
    "ContractViolation",
    "MemoryContract",
    "MemoryStateMachine",
    "blank_texts",
    "check_contract",
    "check_memory",
    "check_protocol_shape",
    "memory_state_machine",
    "messages",
    "queries",
    "sessions",
    "texts",
]

# The names that need Hypothesis, and the private module that defines each: they
# are imported on first use, so `import himga.testing` itself never imports it.
_NEEDS_HYPOTHESIS = {
    "check_contract": "_check",
    "check_memory": "_check",
    "MemoryContract": "_pytest",
    "MemoryStateMachine": "_stateful",
    "memory_state_machine": "_stateful",
    "blank_texts": "_strategies",
    "messages": "_strategies",
    "queries": "_strategies",
    "sessions": "_strategies",
    "texts": "_strategies",
}


def _require_hypothesis(name: str) -> None:
    require("hypothesis", extra="testing", purpose=f"himga.testing.{name}")


__getattr__, __dir__ = lazy_names(
    __name__, _NEEDS_HYPOTHESIS, globals(), before=_require_hypothesis
)

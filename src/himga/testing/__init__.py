"""The conformance kit: prove that a memory honours :class:`~himga.memory.BaseMemory`.

Needs the ``testing`` extra (Hypothesis): ``pip install 'himga[testing]'``.
"""

from himga._extras import require

require("hypothesis", extra="testing", purpose="himga.testing (the conformance kit)")

from himga.testing._check import (  # noqa: E402
    DEFAULT_MAX_EXAMPLES,
    check_contract,
    check_memory,
)
from himga.testing._contracts import CONTRACTS, Contract, ContractViolation  # noqa: E402
from himga.testing._pytest import MemoryContract  # noqa: E402
from himga.testing._stateful import MemoryStateMachine, memory_state_machine  # noqa: E402
from himga.testing._strategies import (  # noqa: E402
    blank_texts,
    messages,
    queries,
    sessions,
    texts,
)

__all__ = [
    "CONTRACTS",
    "DEFAULT_MAX_EXAMPLES",
    "Contract",
    "ContractViolation",
    "MemoryContract",
    "MemoryStateMachine",
    "blank_texts",
    "check_contract",
    "check_memory",
    "memory_state_machine",
    "messages",
    "queries",
    "sessions",
    "texts",
]

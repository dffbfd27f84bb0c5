"""Adapters to external memory systems (mem0, MCP memory servers, LangMem), each behind its
own extra. The recording proxy that counts what such a system spends on its LLM, per phase,
is :mod:`himga.metering`'s; its names here are deprecated aliases, kept for one release.

Importing this package imports none of those systems: each adapter imports its
library when constructed and raises :class:`~himga._extras.MissingExtraError`
naming the extra when it is missing. See ``docs/integrations/``.
"""

import warnings
from typing import Any

from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.integrations._langmem import LangMemMemory
from himga.integrations._mcp import MCP_PRESETS, MCPMemory
from himga.integrations._mem0 import Mem0Memory

__all__ = [
    "MCP_PRESETS",
    "IntegrationConfigError",
    "IntegrationError",
    "LangMemMemory",
    "MCPMemory",
    "Mem0Memory",
]

#: Names that moved to :mod:`himga.metering` (0.2), served from there with a warning.
_MOVED = frozenset({"PHASES", "CostSummary", "PhaseCost", "ProxyCall", "RecordingProxy"})


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module 'himga.integrations' has no attribute {name!r}")
    warnings.warn(
        f"himga.integrations.{name} moved to himga.metering.{name}; the alias goes in the "
        "next release",
        DeprecationWarning,
        stacklevel=2,
    )
    import himga.metering

    return getattr(himga.metering, name)

"""Adapters to external memory systems (mem0, MCP memory servers, LangMem), each behind its
own extra. The recording proxy that counts what such a system spends on its LLM, per phase,
is :mod:`himga.metering`'s; its names here are deprecated aliases, kept for one release.

Importing this package imports none of those systems: each adapter imports its
library when constructed and raises :class:`~himga._extras.MissingExtraError`
naming the extra when it is missing. See ``docs/integrations/``.
"""

from himga._lazy import moved_names
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

#: Names that moved to :mod:`himga.metering`, kept here for one release.
__getattr__ = moved_names(
    __name__,
    dict.fromkeys(
        ("PHASES", "CostSummary", "PhaseCost", "ProxyCall", "RecordingProxy"), "himga.metering"
    ),
    globals(),
)

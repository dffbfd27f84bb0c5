"""Adapters to external memory systems (mem0, MCP memory servers, LangMem), each behind its
own extra, and a recording proxy that counts what such a system spends on its LLM, per phase.

Importing this package imports none of those systems: each adapter imports its
library when constructed and raises :class:`~himga._extras.MissingExtraError`
naming the extra when it is missing. See ``docs/integrations/``.
"""

from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.integrations._langmem import LangMemMemory
from himga.integrations._mcp import MCP_PRESETS, MCPMemory
from himga.integrations._mem0 import Mem0Memory
from himga.integrations._proxy import PHASES, CostSummary, PhaseCost, ProxyCall, RecordingProxy

__all__ = [
    "MCP_PRESETS",
    "PHASES",
    "CostSummary",
    "IntegrationConfigError",
    "IntegrationError",
    "LangMemMemory",
    "MCPMemory",
    "Mem0Memory",
    "PhaseCost",
    "ProxyCall",
    "RecordingProxy",
]

"""Adapters to external memory systems (mem0, MCP memory servers), each behind its own extra.

Importing this package imports none of those systems: each adapter imports its
library when constructed and raises :class:`~himga._extras.MissingExtraError`
naming the extra when it is missing. See ``docs/integrations/``.
"""

from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.integrations._mcp import MCP_PRESETS, MCPMemory
from himga.integrations._mem0 import Mem0Memory

__all__ = ["MCP_PRESETS", "IntegrationConfigError", "IntegrationError", "MCPMemory", "Mem0Memory"]

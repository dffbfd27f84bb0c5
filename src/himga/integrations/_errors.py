"""The exceptions of himga's adapters to external memory systems."""

from __future__ import annotations

from himga._errors import HimgaError

__all__ = ["IntegrationConfigError", "IntegrationError"]


class IntegrationError(HimgaError, RuntimeError):
    """An external memory system failed: its server did not start, a call returned an error."""


class IntegrationConfigError(HimgaError, ValueError):
    """An adapter was given settings it cannot run with; the message names the setting."""

"""The roots of himga's own exceptions and warnings."""

from __future__ import annotations

__all__ = ["HimgaError", "HimgaWarning"]


class HimgaError(Exception):
    """Root of every exception himga raises on purpose; each also keeps its builtin base."""


class HimgaWarning(UserWarning):
    """Root of every warning himga emits on purpose, so one filter can select them all."""

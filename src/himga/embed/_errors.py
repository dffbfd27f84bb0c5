"""Errors raised by :mod:`himga.embed`."""

from __future__ import annotations

__all__ = ["EmbedderError", "UnknownEmbedderError"]


class EmbedderError(Exception):
    """An embedder could not be built or could not embed."""


class UnknownEmbedderError(EmbedderError, ValueError):
    """An embedder spec names no known backend, or its arguments are malformed."""

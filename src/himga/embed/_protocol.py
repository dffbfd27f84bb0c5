"""The embedder interface every backend of :mod:`himga.embed` implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = ["EmbedKind", "Embedder"]

EmbedKind = Literal["query", "passage"]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors.

    ``embed(texts, kind)`` returns an array of shape ``(len(texts), dim)`` whose rows
    have unit L2 norm; ``kind`` tells asymmetric models (e5, BGE) whether the texts
    are search queries or stored passages. Equal inputs give equal outputs.
    ``model_id`` names the model and every setting that changes its vectors, so it
    can key a cache.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]: ...

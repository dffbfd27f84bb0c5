"""Static embeddings through model2vec: a token lookup table, no neural network at query time."""

from __future__ import annotations

from typing import Any, Literal

from himga._extras import require
from himga.embed._base import LibraryEmbedder

__all__ = ["Model2VecEmbedder"]


class Model2VecEmbedder(LibraryEmbedder):
    """A model2vec ``StaticModel`` loaded from a local directory or a Hugging Face id.

    Loading an id needs the model in the local Hugging Face cache or network access;
    a model that cannot be loaded raises :class:`EmbedderError` naming it. Static
    models are symmetric: ``kind`` is ignored. Needs the ``model2vec`` extra.
    """

    backend = "model2vec"

    def __init__(self, model: str) -> None:
        model2vec = require("model2vec", extra="model2vec", purpose="the model2vec embedder")
        self.model = model
        with self._loading():  # hub, file system and format errors alike
            self._model: Any = model2vec.StaticModel.from_pretrained(model)
        self._dim = int(self._model.dim)

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        return self._model.encode(texts)

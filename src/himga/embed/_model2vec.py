"""Static embeddings through model2vec: a token lookup table, no neural network at query time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from himga._extras import require
from himga.embed._errors import EmbedderError
from himga.embed._normalise import unit_rows

__all__ = ["Model2VecEmbedder"]


class Model2VecEmbedder:
    """A model2vec ``StaticModel`` loaded from a local directory or a Hugging Face id.

    Loading an id needs the model in the local Hugging Face cache or network access;
    a model that cannot be loaded raises :class:`EmbedderError` naming it. Static
    models are symmetric: ``kind`` is ignored. Needs the ``model2vec`` extra.
    """

    def __init__(self, model: str) -> None:
        model2vec = require("model2vec", extra="model2vec", purpose="the model2vec embedder")
        self.model = model
        try:
            self._model: Any = model2vec.StaticModel.from_pretrained(model)
        except Exception as exc:  # hub, file system and format errors alike: say which model
            raise EmbedderError(f"model2vec: cannot load model {model!r}: {exc}") from exc
        self._dim = int(self._model.dim)

    @property
    def model_id(self) -> str:
        return f"model2vec:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"Model2VecEmbedder({self.model!r})"

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return unit_rows(self._model.encode(list(texts)), len(texts), self.model_id)

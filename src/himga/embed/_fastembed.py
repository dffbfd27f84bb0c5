"""ONNX embedding models through fastembed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from himga._extras import require
from himga.embed._errors import EmbedderError
from himga.embed._normalise import unit_rows

__all__ = ["FastEmbedEmbedder"]


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` model, by fastembed's model name.

    Queries go through ``query_embed`` and passages through ``passage_embed``, so
    fastembed applies the prefixes its asymmetric models (e5, BGE) expect. The model
    is fetched into fastembed's cache on first use; a model that cannot be loaded
    raises :class:`EmbedderError` naming it. Needs the ``fastembed`` extra.
    """

    def __init__(self, model: str) -> None:
        fastembed = require("fastembed", extra="fastembed", purpose="the fastembed embedder")
        self.model = model
        try:
            self._model: Any = fastembed.TextEmbedding(model_name=model)
            self._dim = len(next(iter(self._model.passage_embed(["dimension probe"]))))
        except Exception as exc:  # unknown name, download and ONNX errors alike: say which model
            raise EmbedderError(f"fastembed: cannot load model {model!r}: {exc}") from exc

    @property
    def model_id(self) -> str:
        return f"fastembed:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"FastEmbedEmbedder({self.model!r})"

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        run = self._model.query_embed if kind == "query" else self._model.passage_embed
        return unit_rows(list(run(list(texts))), len(texts), self.model_id)

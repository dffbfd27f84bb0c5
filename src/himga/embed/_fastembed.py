"""ONNX embedding models through fastembed."""

from __future__ import annotations

from typing import Any, Literal

from himga._extras import require
from himga.embed._base import LibraryEmbedder

__all__ = ["FastEmbedEmbedder"]


class FastEmbedEmbedder(LibraryEmbedder):
    """A fastembed ``TextEmbedding`` model, by fastembed's model name.

    Queries go through ``query_embed`` and passages through ``passage_embed``, so
    fastembed applies the prefixes its asymmetric models (e5, BGE) expect. The model
    is fetched into fastembed's cache on first use; a model that cannot be loaded
    raises :class:`EmbedderError` naming it. Needs the ``fastembed`` extra.
    """

    backend = "fastembed"

    def __init__(self, model: str) -> None:
        fastembed = require("fastembed", extra="fastembed", purpose="the fastembed embedder")
        self.model = model
        with self._loading():  # unknown name, download and ONNX errors alike
            self._model: Any = fastembed.TextEmbedding(model_name=model)
            self._dim = len(next(iter(self._model.passage_embed(["dimension probe"]))))

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        run = self._model.query_embed if kind == "query" else self._model.passage_embed
        return list(run(texts))

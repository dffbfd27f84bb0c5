"""Any sentence-transformers model, by Hugging Face id or local path."""

from __future__ import annotations

from typing import Any, Literal

from himga._extras import require
from himga.embed._base import LibraryEmbedder

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder(LibraryEmbedder):
    """A ``SentenceTransformer`` model on CPU (or ``device``).

    When the model's configuration defines prompts named ``"query"`` / ``"passage"``
    (or ``"document"``), they are applied by ``kind``; otherwise texts are embedded
    as they are. A model that cannot be loaded raises :class:`EmbedderError` naming
    it. Needs the ``sentence-transformers`` extra.
    """

    backend = "sentence-transformers"

    def __init__(self, model: str, *, device: str = "cpu") -> None:
        st = require(
            "sentence_transformers",
            extra="sentence-transformers",
            purpose="the sentence-transformers embedder",
        )
        self.model = model
        with self._loading():  # hub, file system and format errors alike
            self._model: Any = st.SentenceTransformer(model, device=device)
        prompts = dict(getattr(self._model, "prompts", None) or {})
        self._prompts = {
            "query": "query" if "query" in prompts else None,
            "passage": next((n for n in ("passage", "document") if n in prompts), None),
        }
        self._dim = int(self._model.get_sentence_embedding_dimension())

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        return self._model.encode(
            texts,
            prompt_name=self._prompts[kind],
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

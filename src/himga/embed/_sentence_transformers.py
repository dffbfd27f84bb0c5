"""Any sentence-transformers model, by Hugging Face id or local path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from himga._extras import require
from himga.embed._errors import EmbedderError
from himga.embed._normalise import unit_rows

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder:
    """A ``SentenceTransformer`` model on CPU (or ``device``).

    When the model's configuration defines prompts named ``"query"`` / ``"passage"``
    (or ``"document"``), they are applied by ``kind``; otherwise texts are embedded
    as they are. A model that cannot be loaded raises :class:`EmbedderError` naming
    it. Needs the ``sentence-transformers`` extra.
    """

    def __init__(self, model: str, *, device: str = "cpu") -> None:
        st = require(
            "sentence_transformers",
            extra="sentence-transformers",
            purpose="the sentence-transformers embedder",
        )
        self.model = model
        try:
            self._model: Any = st.SentenceTransformer(model, device=device)
        except Exception as exc:  # hub, file system and format errors alike: say which model
            raise EmbedderError(
                f"sentence-transformers: cannot load model {model!r}: {exc}"
            ) from exc
        prompts = dict(getattr(self._model, "prompts", None) or {})
        self._prompts = {
            "query": "query" if "query" in prompts else None,
            "passage": next((n for n in ("passage", "document") if n in prompts), None),
        }
        self._dim = int(self._model.get_sentence_embedding_dimension())

    @property
    def model_id(self) -> str:
        return f"sentence-transformers:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r})"

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            prompt_name=self._prompts[kind],
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return unit_rows(vectors, len(texts), self.model_id)

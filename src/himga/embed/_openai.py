"""Any OpenAI-compatible ``/v1/embeddings`` server (OpenAI, vLLM, Ollama, TEI), over stdlib HTTP."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from himga.embed._base import BaseEmbedder
from himga.embed._errors import EmbedderError

__all__ = ["OpenAIEmbedder"]

_BATCH = 128


class OpenAIEmbedder(BaseEmbedder):
    """Embeddings from ``POST <base_url>/embeddings`` in the OpenAI wire format.

    ``base_url`` ends before ``/embeddings`` (``http://localhost:8000/v1``); it
    defaults to ``$OPENAI_BASE_URL``, else OpenAI's. ``api_key`` defaults to
    ``$OPENAI_API_KEY`` and is sent as a bearer token when set (local servers need
    none). The server does not know query from passage: ``query_prefix`` /
    ``passage_prefix`` are prepended by ``kind`` (``"query: "`` / ``"passage: "``
    for an e5 model). Texts go in batches of 128; vectors are re-normalised.
    ``dim`` is learnt from the first response (one probe request if asked first).
    An HTTP, network or format error raises :class:`EmbedderError` naming the URL.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        base = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.base_url = base.rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._prefix = {"query": query_prefix, "passage": passage_prefix}
        self.timeout = timeout
        self._learnt_dim: int | None = None

    @property
    def model_id(self) -> str:
        prefixes = f"|{self._prefix['query']}|{self._prefix['passage']}"
        return f"openai:{self.model}@{self.base_url}" + (prefixes if prefixes != "||" else "")

    @property
    def dim(self) -> int:
        if self._learnt_dim is None:
            self._learnt_dim = int(self.embed(["dimension probe"]).shape[1])
        return self._learnt_dim

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, {self.base_url!r})"

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        out = super().embed(texts, kind)
        self._learnt_dim = out.shape[1]
        return out

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        prefix = self._prefix[kind]
        batches = [
            self._request([prefix + text for text in texts[start : start + _BATCH]])
            for start in range(0, len(texts), _BATCH)
        ]
        return np.concatenate(batches)

    def _request(self, inputs: list[str]) -> NDArray[np.float32]:
        url = f"{self.base_url}/embeddings"
        body = json.dumps({"model": self.model, "input": inputs, "encoding_format": "float"})
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload: Any = json.load(response)
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace")
            raise EmbedderError(f"{url}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EmbedderError(f"{url}: {exc}") from exc
        try:
            data = sorted(payload["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"{url}: malformed embeddings response: {exc!r}") from exc
        if vectors.shape[0] != len(inputs) or vectors.ndim != 2:
            raise EmbedderError(
                f"{url}: {len(inputs)} inputs but {len(data)} embeddings in the response"
            )
        return vectors

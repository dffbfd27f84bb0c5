"""A deterministic feature-hashing embedder: no model, no download, for tests and examples."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from himga.embed._base import BaseEmbedder

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+")


class HashEmbedder(BaseEmbedder):
    """Signed feature hashing of lower-cased words, word bigrams and character trigrams.

    Vectors depend only on the text (blake2b, not Python's salted ``hash``), so they are
    identical across processes and machines. Texts sharing words score high cosine
    similarity; there is no semantics beyond surface overlap. ``kind`` is ignored: the
    model is symmetric. A text with no features (empty, punctuation only) maps to a
    fixed unit vector so every row stays unit-norm.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ValueError(f"HashEmbedder dim must be >= 1, got {dim}")
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"hash-{self._dim}"

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self._dim})"

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        # _encode normalises row by row; unit_rows over its rows again would move the last
        # bit of vectors this embedder has always given.
        return self._encode(list(texts), kind)

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self._dim] += sign * weight
            norm = float(np.linalg.norm(out[row]))
            if norm > 0.0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    features = [("w:" + w, 1.0) for w in words]
    features += [("b:" + a + " " + b, 0.5) for a, b in itertools.pairwise(words)]
    for w in words:
        padded = f"<{w}>"
        features += [("c:" + padded[i : i + 3], 0.25) for i in range(len(padded) - 2)]
    return features

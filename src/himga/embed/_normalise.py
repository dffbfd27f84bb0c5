"""The output contract every backend enforces: float32 rows of unit L2 norm."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from himga.embed._errors import EmbedderError

__all__ = ["unit_rows"]


def unit_rows(vectors: Any, rows: int, model_id: str) -> NDArray[np.float32]:
    """``vectors`` as a C-contiguous float32 ``(rows, dim)`` array with unit-norm rows.

    Raises :class:`EmbedderError` when the backend returned the wrong number of rows
    or a non-finite or all-zero vector, which no normalisation can repair.
    """
    out = np.array(vectors, dtype=np.float32, ndmin=2, copy=True)
    if rows == 0:
        return out.reshape(0, out.shape[-1] if out.size else 0)
    if out.ndim != 2 or out.shape[0] != rows:
        raise EmbedderError(
            f"{model_id}: expected {rows} vectors, got an array of shape {out.shape}"
        )
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbedderError(f"{model_id}: returned a zero or non-finite vector")
    out /= norms
    return out

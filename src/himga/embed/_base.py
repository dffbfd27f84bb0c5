"""What the model backends share: ``dim``, the empty case and normalisation of ``embed``, and
(for backends naming a library's model) the model id, repr and load-error wrapping."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from himga.embed._errors import EmbedderError
from himga.embed._normalise import unit_rows

__all__ = ["BaseEmbedder", "LibraryEmbedder"]


class BaseEmbedder(ABC):
    """An :class:`~himga.embed.Embedder` whose backend only turns texts into raw vectors.

    ``embed`` returns ``(0, dim)`` for no texts and otherwise the rows of
    :meth:`_encode`, checked and normalised by :func:`unit_rows`.
    """

    _dim: int

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int:
        return self._dim

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(self._encode(list(texts), kind), len(texts), self.model_id)

    @abstractmethod
    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        """One raw vector per text (any array-like; need not be normalised)."""


class LibraryEmbedder(BaseEmbedder):
    """A model of an embedding library, named by ``model``: ``<backend>:<model>`` is its id."""

    backend: ClassVar[str]
    model: str

    @property
    def model_id(self) -> str:
        return f"{self.backend}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    @contextmanager
    def _loading(self) -> Iterator[None]:
        """Any error in the block (unknown name, hub, file system, format) becomes an
        :class:`EmbedderError` that says which model could not be loaded."""
        try:
            yield
        except Exception as exc:
            raise EmbedderError(f"{self.backend}: cannot load model {self.model!r}: {exc}") from exc

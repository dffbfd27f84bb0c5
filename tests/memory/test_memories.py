"""The reference memories' own behaviour: contract laws on any text, and each one's semantics."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga._extras import MissingExtraError
from himga.data.schema import Message, Session
from himga.memory import (
    BaseMemory,
    BM25Memory,
    FullContextMemory,
    Hit,
    KeywordMemory,
    SearchableMemory,
)

MEMORIES: list[Callable[[], BaseMemory]] = [FullContextMemory, KeywordMemory, BM25Memory]
SEARCHABLE: list[Callable[[], SearchableMemory]] = [KeywordMemory, BM25Memory]

SESSION = Session("s1", [], "1:56 pm on 8 May, 2023")

any_text = st.one_of(
    st.text(),
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)),  # CJK
    st.lists(st.sampled_from(["😀", "👩‍👩‍👧", "🇯🇵", "❤️", "paris", "Paris!", " "])).map("".join),
    st.sampled_from(["", " ", "\n\t", "\u3000", "the and of", "?!"]),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["Caroline", "Melanie", "user", ""]) | st.text(max_size=8),
    content=any_text,
    turn_id=st.none() | st.from_regex(r"D[0-9]:[0-9]{1,2}", fullmatch=True),
)
sessions = st.builds(
    Session,
    session_id=st.just("s"),
    messages=st.just(()),
    date_str=st.none() | st.sampled_from(["1:56 pm on 8 May, 2023", "2024-01-01", "?"]),
)


def ingest_all(memory: BaseMemory, turns: Sequence[tuple[Message, Session]]) -> None:
    for message, session in turns:
        memory.ingest(message, session)


def say(memory: BaseMemory, *contents: str, role: str = "Caroline") -> None:
    for i, content in enumerate(contents):
        memory.ingest(Message(role, content, f"D1:{i + 1}"), SESSION)


# -- laws every reference memory obeys ------------------------------------------------------


@pytest.mark.parametrize("factory", MEMORIES)
def test_constructible_without_arguments_and_conforming(factory: Callable[[], BaseMemory]) -> None:
    memory = factory()
    assert isinstance(memory, BaseMemory)
    assert isinstance(memory, SearchableMemory) == (factory in SEARCHABLE)


@pytest.mark.parametrize("factory", MEMORIES)
@given(query=any_text)
def test_fresh_memory_retrieves_nothing(factory: Callable[[], BaseMemory], query: str) -> None:
    assert factory().retrieve(query) == ""


@pytest.mark.parametrize("factory", MEMORIES)
@given(turns=st.lists(st.tuples(messages, sessions), max_size=8), queries=st.lists(any_text))
def test_any_text_in_any_query_out_never_raises(
    factory: Callable[[], BaseMemory],
    turns: list[tuple[Message, Session]],
    queries: list[str],
) -> None:
    memory = factory()
    ingest_all(memory, turns)
    for query in queries:
        assert isinstance(memory.retrieve(query), str)
        if isinstance(memory, SearchableMemory):
            hits = memory.search(query, 3)
            assert len(hits) <= 3
            assert all(isinstance(hit, Hit) for hit in hits)


@pytest.mark.parametrize("factory", MEMORIES)
@given(before=st.lists(st.tuples(messages, sessions), max_size=5))
def test_reset_forgets_everything(
    factory: Callable[[], BaseMemory], before: list[tuple[Message, Session]]
) -> None:
    memory = factory()
    ingest_all(memory, before)
    say(memory, "I adopted a puppy named zorblax")
    memory.retrieve("zorblax")  # builds any index before the reset
    memory.reset()
    assert memory.retrieve("zorblax") == ""
    say(memory, "My new puppy is lovely")
    assert "zorblax" not in memory.retrieve("zorblax puppy")
    if isinstance(memory, SearchableMemory):
        assert all("zorblax" not in hit.text for hit in memory.search("zorblax puppy", 10))


@pytest.mark.parametrize("factory", MEMORIES)
def test_instances_share_nothing(factory: Callable[[], BaseMemory]) -> None:
    first, second = factory(), factory()
    say(first, "I adopted a puppy named zorblax")
    assert "zorblax" in first.retrieve("zorblax")
    assert second.retrieve("zorblax") == ""
    second.reset()
    assert "zorblax" in first.retrieve("zorblax")


@pytest.mark.parametrize("factory", SEARCHABLE)
def test_search_with_k_below_one_finds_nothing(factory: Callable[[], SearchableMemory]) -> None:
    memory = factory()
    say(memory, "zorblax")
    assert memory.search("zorblax", 0) == []


@pytest.mark.integration
def test_importing_the_memories_leaves_the_bm25_extra_unloaded() -> None:
    code = (
        "import sys, himga.memory\n"
        "loaded = {'bm25s', 'numpy', 'Stemmer'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_bm25_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(MissingExtraError, match=r"himga\[bm25\]"):
        BM25Memory()


# -- FullContextMemory ---------------------------------------------------------------------


@given(turns=st.lists(st.tuples(messages, sessions), max_size=8), query=any_text)
def test_full_context_is_every_line_in_order(
    turns: list[tuple[Message, Session]], query: str
) -> None:
    memory = FullContextMemory()
    expected = [
        f"[{s.date_str}] {m.role}: {m.content}" if s.date_str else f"{m.role}: {m.content}"
        for m, s in turns
    ]
    assert memory.retrieve(query) == ""
    for count, (message, session) in enumerate(turns, start=1):
        memory.ingest(message, session)
        # retrieving between ingests must not leave a stale context behind
        assert memory.retrieve(query) == "\n".join(expected[:count])


@given(
    contents=st.lists(st.text(max_size=40), min_size=1, max_size=12),
    budget=st.integers(min_value=0, max_value=200),
)
def test_token_budget_keeps_the_longest_recent_suffix_that_fits(
    contents: list[str], budget: int
) -> None:
    memory = FullContextMemory(max_tokens=budget)
    say(memory, *contents)
    lines = [f"[{SESSION.date_str}] Caroline: {content}" for content in contents]
    # tokens ~ ceil(characters / 4) per line, plus one per newline
    cost = [math.ceil(len(line) / 4) + 1 for line in lines]
    kept = 0
    while kept < len(lines) and sum(cost[len(lines) - kept - 1 :]) <= budget:
        kept += 1
    assert memory.retrieve("") == "\n".join(lines[len(lines) - kept :])


def test_full_context_rejects_a_negative_budget() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        FullContextMemory(max_tokens=-1)


# -- KeywordMemory -------------------------------------------------------------------------


def test_keyword_matching_ignores_case_punctuation_and_stopwords() -> None:
    memory = KeywordMemory()
    say(memory, "We flew to PARIS!", "What a day.", "Ｐａｒｉｓ again")
    assert memory.retrieve("paris?") == (
        "[1:56 pm on 8 May, 2023] Caroline: We flew to PARIS!\n"
        "[1:56 pm on 8 May, 2023] Caroline: Ｐａｒｉｓ again"
    )
    assert memory.retrieve("what a day") == "[1:56 pm on 8 May, 2023] Caroline: What a day."
    assert memory.retrieve("what is the") == ""


@given(count=st.integers(min_value=0, max_value=30), k=st.integers(min_value=1, max_value=12))
def test_keyword_keeps_the_most_recent_k_in_order(count: int, k: int) -> None:
    memory = KeywordMemory(k=k)
    say(memory, *(f"hike number {i}" for i in range(count)), "unrelated words")
    expected = [f"[1:56 pm on 8 May, 2023] Caroline: hike number {i}" for i in range(count)][-k:]
    assert memory.retrieve("hiking? no: hike") == "\n".join(expected)
    hits = memory.search("hike", k)
    assert [hit.text for hit in hits] == expected[::-1]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


# -- BM25Memory ----------------------------------------------------------------------------

VOCABULARY = ["apple", "pear", "kiwi", "plum", "fig", "lime"]


def lucene_bm25(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Lucene BM25 written out from its definition (without the constant (k1 + 1) factor)."""
    n = len(docs)
    avgdl = sum(map(len, docs)) / n
    scores = []
    for doc in docs:
        score = 0.0
        for term in query:
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


@given(
    docs=st.lists(st.lists(st.sampled_from(VOCABULARY), max_size=6), min_size=1, max_size=12),
    query=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
    k=st.integers(min_value=1, max_value=15),
)
def test_bm25_scores_are_lucene_bm25(docs: list[list[str]], query: list[str], k: int) -> None:
    memory = BM25Memory()
    for i, doc in enumerate(docs):
        memory.ingest(Message("Ann", " ".join(doc), f"D1:{i}"), SESSION)
    expected = lucene_bm25([["ann", *doc] for doc in docs], query, memory.k1, memory.b)
    ranked = sorted(
        (i for i, score in enumerate(expected) if score > 0), key=lambda i: (-expected[i], i)
    )
    hits = memory.search(" ".join(query), k)
    assert len(hits) == min(k, len(ranked))
    positions = [int(hit.turn_id[3:]) for hit in hits if hit.turn_id is not None]
    for hit, position in zip(hits, positions, strict=True):
        assert hit.score == pytest.approx(expected[position], rel=1e-4)
    # best first; equal scores (float32 in bm25s) in conversation order
    for before, after in itertools.pairwise(positions):
        tied = expected[before] == pytest.approx(expected[after], rel=1e-5)
        assert (before < after) if tied else expected[before] > expected[after]
    # nothing left out scores better than the last hit
    if len(hits) < len(ranked):
        assert hits[-1].score >= expected[ranked[len(hits)]] * (1 - 1e-4)


@given(
    batches=st.lists(
        st.lists(st.lists(st.sampled_from(VOCABULARY), max_size=6), min_size=1, max_size=5),
        min_size=2,
        max_size=4,
    ),
    query=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
)
def test_bm25_rebuilds_idf_and_lengths_over_the_whole_history(
    batches: list[list[list[str]]], query: list[str]
) -> None:
    # Queries between batches of ingests: each rebuild must score against every turn so
    # far (document frequencies, average length), not only the turns added since.
    # No speaker, so empty turns (length 0) count towards the average length too.
    memory = BM25Memory()
    docs: list[list[str]] = []
    for batch in batches:
        for doc in batch:
            memory.ingest(Message("", " ".join(doc), f"D1:{len(docs)}"), SESSION)
            docs.append(doc)
        expected = lucene_bm25(docs, query, memory.k1, memory.b)
        hits = memory.search(" ".join(query), len(docs))
        found = {int(hit.turn_id[3:]): hit.score for hit in hits if hit.turn_id is not None}
        assert set(found) == {i for i, score in enumerate(expected) if score > 0}
        for position, score in found.items():
            assert score == pytest.approx(expected[position], rel=1e-4)


def test_bm25_finds_the_stemmed_term_and_the_speaker() -> None:
    memory = BM25Memory()
    say(memory, "I love the mountains", "Running a marathon next week", "Nice weather")
    say(memory, "I painted a sunrise", role="Melanie")
    assert [hit.text for hit in memory.search("who runs marathons?", 5)] == [
        "[1:56 pm on 8 May, 2023] Caroline: Running a marathon next week"
    ]
    assert memory.search("What did Melanie paint?", 1)[0].text.endswith("I painted a sunrise")


def test_bm25_retrieve_is_the_top_k_in_conversation_order() -> None:
    memory = BM25Memory(k=2)
    say(memory, "apple pie", "nothing", "apple apple apple", "apple tart with apple", "pear")
    top = memory.search("apple", 2)
    assert [hit.turn_id for hit in top] == ["D1:3", "D1:4"]
    assert memory.retrieve("apple") == "\n".join(hit.text for hit in top)
    assert [hit.turn_id for hit in memory.search("apple", 10)] == ["D1:3", "D1:4", "D1:1"]
    # the best turn comes later in the conversation than the second best
    memory = BM25Memory(k=2)
    say(memory, "apple tart with apple", "nothing", "apple apple apple", "apple pie", "pear")
    top = memory.search("apple", 2)
    assert [hit.turn_id for hit in top] == ["D1:3", "D1:1"]
    assert memory.retrieve("apple") == f"{top[1].text}\n{top[0].text}"


@given(
    docs=st.lists(st.lists(st.sampled_from(VOCABULARY), max_size=6), min_size=1, max_size=12),
    query=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
    k=st.integers(min_value=1, max_value=15),
)
def test_bm25_retrieve_is_search_in_conversation_order(
    docs: list[list[str]], query: list[str], k: int
) -> None:
    memory = BM25Memory(k=k)
    for i, doc in enumerate(docs):
        memory.ingest(Message("Ann", " ".join(doc), f"D1:{i:02}"), SESSION)
    hits = memory.search(" ".join(query), k)
    in_order = sorted(hits, key=lambda hit: str(hit.turn_id))  # zero-padded: sorts by position
    assert memory.retrieve(" ".join(query)) == "\n".join(hit.text for hit in in_order)


def index_of(memory: BM25Memory) -> object:
    """The bm25s index the memory holds now (white-box: the dirty flag is not observable)."""
    return memory._index


def test_bm25_indexes_lazily_once_per_batch_of_ingests() -> None:
    memory = BM25Memory()
    say(memory, "apple pie", "pear tart")
    assert index_of(memory) is None  # ingest never builds
    memory.retrieve("apple")
    built = index_of(memory)
    assert built is not None
    memory.search("pear", 3)
    memory.retrieve("tart")
    assert index_of(memory) is built  # queries without new ingests reuse the index
    say(memory, "plum jam")
    assert index_of(memory) is built
    assert "plum jam" in memory.retrieve("plum")
    assert index_of(memory) is not built


def test_bm25_without_any_term_finds_nothing() -> None:
    memory = BM25Memory()
    say(memory, "", "the and of", "😀 ?!")
    memory.ingest(Message("", "", None), SESSION)
    assert memory.retrieve("the 😀") == ""
    assert memory.search("anything", 5) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be >= 1"),
        ({"k1": -1.0}, "k1 must be"),
        ({"k1": math.nan}, "k1 must be"),
        ({"k1": math.inf}, "k1 must be"),
        ({"b": 1.5}, "b must be"),
        ({"b": math.nan}, "b must be"),
    ],
)
def test_bm25_rejects_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BM25Memory(**kwargs)  # type: ignore[arg-type]


def test_keyword_rejects_k_below_one() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        KeywordMemory(k=0)


def test_repr_names_the_configuration_and_no_content() -> None:
    # The run checkpoint refuses to resume under another repr, so two
    # configurations must differ and ingested text must never show.
    configured: list[BaseMemory] = [
        BM25Memory(k=5, k1=1.2, b=0.5),
        KeywordMemory(k=3),
        FullContextMemory(20),
    ]
    defaults: list[BaseMemory] = [BM25Memory(), KeywordMemory(), FullContextMemory()]
    for memory, default in zip(configured, defaults, strict=True):
        assert repr(memory) != repr(default)
        memory.ingest(Message(role="Ann", content="secret-canary", turn_id="D1:1"), SESSION)
        assert "secret-canary" not in repr(memory)
    assert repr(configured[0]) == "BM25Memory(k=5, k1=1.2, b=0.5)"

"""HiMGAMemory: graphs of a hand-worked conversation, rankings known by construction, laws."""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.data.schema import Message, Session
from himga.memory import HiMGAMemory, HiMGAWeights, SearchableMemory, load_memory
from himga.memory._himga._cues import asks_what_you_did, date_cue
from himga.memory._himga._entities import entity_mentions
from himga.testing import MemoryContract, check_memory


class TestHiMGAMemoryContract(MemoryContract):
    deterministic = True
    factory = HiMGAMemory


@pytest.mark.slow
def test_configured_memories_pass_the_kit() -> None:
    # a single-turn top-k, and every edge type spreading from a single seed
    spread_everywhere = HiMGAWeights(temporal=1, membership=1, qa=1, entity=1, date=3, seeds=1)
    check_memory(
        lambda: HiMGAMemory(k=1, weights=spread_everywhere), max_examples=settings().max_examples
    )


def test_registered_and_searchable() -> None:
    assert load_memory("himga") is HiMGAMemory
    assert isinstance(HiMGAMemory(), SearchableMemory)


def memory_of(
    sessions: Sequence[Session], weights: HiMGAWeights | None = None, k: int = 10
) -> HiMGAMemory:
    memory = HiMGAMemory(k, weights=weights)
    for session in sessions:
        for message in session.messages:
            memory.ingest(message, session)
    return memory


def ids(memory: HiMGAMemory, query: str, k: int = 50) -> list[str | None]:
    return [hit.turn_id for hit in memory.search(query, k)]


def scores(memory: HiMGAMemory, query: str) -> dict[str | None, float]:
    return {hit.turn_id: hit.score for hit in memory.search(query, 1000)}


# -- the graphs of a hand-worked 6-turn conversation --------------------------------------

SIX = [
    Session(
        "s1",
        [
            Message("Ann", "Did you visit Porto?", "D1:1"),
            Message("Bo", "Yes, twice.", "D1:2"),
            Message("Ann", "Lovely.", "D1:3"),
        ],
        "2023-05-08",
    ),
    Session(
        "s2",
        [
            Message("Bo", "I saw the tiles of Porto again.", "D2:1"),
            Message("Ann", "What did you eat?", "D2:2"),
            Message("Bo", "Grilled sardines.", "D2:3"),
        ],
        "2023-06-10",
    ),
]


def test_graphs_of_a_hand_worked_conversation() -> None:
    graphs = {name: g.toarray() for name, g in memory_of(SIX).index().graphs.items()}
    temporal = np.zeros((6, 6))
    for a, b in [(0, 1), (1, 2), (3, 4), (4, 5)]:
        temporal[a, b] = temporal[b, a] = 1
    membership = np.zeros((6, 6))
    for group in ([0, 1, 2], [3, 4, 5]):
        for a in group:
            for b in group:
                membership[a, b] = a != b
    qa = np.zeros((6, 6))
    qa[1, 0] = qa[5, 4] = (
        1  # the answer's row, the question's column; D1:3 -> D2:1 crosses sessions
    )
    # "Porto" links D1:1 and D2:1 twice -- as a proper noun and as a rare word (2 turns of 6):
    # weight 2 * idf = 2 * ln(6 / 2).
    entity = np.zeros((6, 6))
    entity[0, 3] = entity[3, 0] = 2 * math.log(3)
    np.testing.assert_array_equal(graphs["temporal"], temporal)
    np.testing.assert_array_equal(graphs["membership"], membership)
    np.testing.assert_array_equal(graphs["qa"], qa)
    np.testing.assert_allclose(graphs["entity"], entity)
    np.testing.assert_array_equal(graphs["semantic"], np.zeros((6, 6)))  # no embedder


# -- rankings known by construction -------------------------------------------------------


def filler(session: int, count: int) -> list[Message]:
    topics = ["weather", "traffic", "groceries", "laundry", "emails", "podcasts", "dinner"]
    return [
        Message("Ann" if i % 2 else "Bo", f"The {topics[i % 7]} was fine today.", f"F{session}:{i}")
        for i in range(count)
    ]


def test_an_answer_two_sessions_away_is_reached_only_through_its_entity() -> None:
    sessions = [
        Session(
            "s1", [*filler(1, 6), Message("Ann", "Margarethe is my sister.", "A"), *filler(1, 6)]
        ),
        Session("s2", filler(2, 12)),
        Session(
            "s3",
            [*filler(3, 6), Message("Ann", "Margarethe won the regional chess final!", "B")],
        ),
    ]
    query = "What did my sister win?"  # "win" stems apart from "won": B shares no query term
    found = ids(memory_of(sessions), query)
    assert found[0] == "A"
    assert "B" in found
    assert "B" not in ids(memory_of(sessions, HiMGAWeights(entity=0)), query)


def test_a_date_cue_chooses_the_session() -> None:
    hike = "We went hiking at the lake."
    sessions = [
        Session("s1", [Message("Ann", hike, "MAY")], "1:56 pm on 8 May, 2023"),
        Session("s2", [Message("Ann", hike, "AUG")], "10:00 am on 12 August, 2023"),
    ]
    assert ids(memory_of(sessions), "Where did we go hiking in August?")[0] == "AUG"
    assert ids(memory_of(sessions), "Where did we go hiking in May 2023?")[0] == "MAY"
    # "may" the verb is no cue: equal scores keep conversation order
    assert ids(memory_of(sessions), "Where may we go hiking?") == ["MAY", "AUG"]
    assert ids(memory_of(sessions, HiMGAWeights(date=0)), "hiking in August?")[0] == "MAY"


def test_an_answer_is_lifted_by_its_question() -> None:
    session = Session(
        "s1",
        [
            Message("Ann", "Hello there friend.", "D1:1"),
            Message("Bo", "What is your favourite dish?", "D1:2"),
            Message("Ann", "Grilled sardines always.", "D1:3"),
        ],
    )
    query = "favourite dish"
    paired = ids(memory_of([session]), query)
    assert paired.index("D1:3") < paired.index("D1:1")
    # Without the pairing, the shorter window of the greeting wins.
    assert ids(memory_of([session], HiMGAWeights(qa=0)), query) == ["D1:2", "D1:1", "D1:3"]


def test_a_verbose_speaker_leans_less_on_its_context() -> None:
    advice = " ".join(
        ["Congratulations! Here are a few tips for the first weeks: keep a routine, be patient,"]
        + ["find a good vet nearby, buy sturdy toys, and give plenty of exercise and rest."] * 3
    )
    sessions = [
        Session(
            "s1",
            [
                Message("user", "I adopted a beagle puppy last week!", "U1"),
                Message("assistant", advice, "A1"),
                Message("user", "Any tips on treats?", "U2"),
                Message("assistant", advice, "A2"),
            ],
        ),
        Session(
            "s2",
            [
                Message("user", "My sister also owns an old beagle, Rex.", "U3"),
                Message("assistant", advice, "A3"),
            ],
        ),
    ]
    terse = memory_of(sessions)
    user, assistant = terse.index().terseness[:2]
    assert user == 1.0
    assert 0 < assistant < 0.7  # the median turn's length over the assistant's
    # The long reply next to a match borrows less of it than the user's short turn.
    ranking = ids(terse, "beagle")
    assert ranking[:2] == ["U3", "U1"]
    assert ranking.index("U2") < ranking.index("A1")
    unweighted = ids(memory_of(sessions, HiMGAWeights(verbosity=0)), "beagle")
    assert unweighted[:4] == ["U3", "U1", "A3", "A1"]
    # Between equals, every speaker's terseness is 1: verbosity changes nothing.
    assert (memory_of(SIX).index().terseness == 1).all()
    # Speakers are told apart exactly (numpy's str scalars would merge "Ann\0" into "Ann").
    nul = [Session("s", [Message("Ann\0", "Porto tiles sardines chess"), Message("Ann", "Porto")])]
    assert memory_of(nul).index().terseness.tolist() == [pytest.approx(3.5 / 5), 1.0]


ROME_REPLY = " ".join(
    ["For dinner in Rome I would book Da Enzo in Trastevere: a small trattoria with carbonara,"]
    + ["cacio e pepe and artichokes, and a queue that moves fast if you arrive early."] * 3
)
ROME = [
    Session(
        "s1",
        [
            Message("user", "We land in Rome on Friday.", "U1"),
            Message("assistant", "Lovely! How long will you stay, and what do you like?", "A1"),
            Message("user", "Three nights. Any restaurant for dinner in Rome?", "U2"),
            Message("assistant", ROME_REPLY, "A2"),
            Message("user", "Great, a dinner restaurant in Rome sorted, thanks!", "U3"),
        ],
    )
]


def test_a_query_asking_what_you_said_points_at_the_assistants_reply() -> None:
    memory = memory_of(ROME)
    # Damped, the long reply ranks below the short user turns around it that echo it...
    assert ids(memory, "Which restaurant in Rome for dinner?")[:3] == ["U2", "U3", "U1"]
    # ...unless the question asks what "you" said: then it is the assistant's turn that counts.
    assert ids(memory, "Which restaurant in Rome did you recommend for dinner?")[0] == "A2"
    assert ids(memory, "Remind me of the Rome restaurant you recommended.")[0] == "A2"
    # A request to the assistant is no such cue.
    assert ids(memory, "Can you remind me which restaurant in Rome for dinner?")[0] == "U2"
    index = memory.index()
    addressed = index.addressed("the restaurant you recommended")
    assert addressed is not None
    assert addressed.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert index.addressed("Which restaurant in Rome?") is None
    # Without an assistant (speakers by name, as in LoCoMo) no one is "you".
    between_equals = memory_of(SIX).index()
    assert between_equals.addressed("What did you say about Porto?") is None


@pytest.mark.parametrize(
    "query",
    [
        "the restaurant you recommended",
        "Which state did you mention?",
        "the list you provided",
        "You'd mentioned a deli.",
        "what you told me about Porto",
        "you had said it was far",
    ],
)
def test_asks_what_you_did(query: str) -> None:
    assert asks_what_you_did(query)


@pytest.mark.parametrize(
    "query",
    [
        "Can you remind me of the restaurant?",
        "Do you think it might be my living room?",
        "What do you need for a visa?",
        "What did Caroline paint?",
        "I recommended a deli to you.",
        "Young people visited.",
    ],
)
def test_asks_nothing_of_you(query: str) -> None:
    assert not asks_what_you_did(query)


def test_a_named_speakers_turns_count_more() -> None:
    sessions = [
        Session(
            "s1",
            [
                *filler(1, 8),
                Message("Ann", "The lake!", "A"),
                Message("Bo", "I painted a lake once, near the old mill.", "B"),
            ],
        )
    ]
    plain = scores(memory_of(sessions, HiMGAWeights(speaker=0)), "Bo's lake?")
    named = scores(memory_of(sessions, HiMGAWeights(speaker=0.5)), "Bo's lake?")
    for turn_id, score in plain.items():
        factor = 1.5 if turn_id in {"B", "F1:0", "F1:2", "F1:4", "F1:6"} else 1.0
        assert named[turn_id] == pytest.approx(factor * score)
    index = memory_of(sessions).index()
    assert index.named_speakers("What did ann and bo paint?") is None  # both: no preference
    assert index.named_speakers("What did Cleo paint?") is None
    assert index.named_speakers("Annual lake?") is None  # whole words only
    letters = memory_of([Session("s", [Message("A", "lake"), Message("B", "lake")])]).index()
    assert letters.named_speakers("Is a lake a pond?") is None  # "a" is a stopword
    b_named = letters.named_speakers("Which lake did B see?")
    assert b_named is not None
    assert b_named.tolist() == [0.0, 1.0]


def test_retrieve_groups_the_best_turns_by_session_under_their_dates() -> None:
    memory = memory_of(SIX, k=2)
    assert memory.retrieve("Porto") == (
        "[2023-05-08]\nAnn: Did you visit Porto?\n\n"
        "[2023-06-10]\nBo: I saw the tiles of Porto again."
    )
    assert [hit.text for hit in memory.search("sardines", 1)] == [
        "[2023-06-10] Bo: Grilled sardines."
    ]
    undated = memory_of([Session("x", [Message("Ann", "Porto!", "1")])])
    assert undated.retrieve("porto") == "[session x]\nAnn: Porto!"


# -- the pieces ----------------------------------------------------------------------------


def test_date_cues() -> None:
    dates = [datetime(2023, 5, 8), datetime(2023, 6, 2), datetime(2023, 8, 20), None]
    assert date_cue("What did we do?", dates) is None
    assert date_cue("what may happen", dates) is None
    assert date_cue("in May", dates) == [1.0, 0.5, 0.0, 0.0]  # June 2: a month after May
    assert date_cue("on October 13, 2022", dates) == [0.0, 0.0, 0.0, 0.0]
    assert date_cue("during 2023", dates) == [1.0, 1.0, 1.0, 0.0]
    # offsets count back from the latest session date, 20 August
    assert date_cue("two weeks ago", dates) == [0.0, 0.0, 0.0, 0.0]
    # 3 months = 90 days before 20 August is 22 May, give or take a quarter of the span
    assert date_cue("roughly 3 months ago", dates) == [1.0, 1.0, 0.0, 0.0]
    assert date_cue("yesterday", [datetime(2023, 8, 19), datetime(2023, 8, 20)]) == [1.0, 1.0]


def test_entities_are_proper_nouns_aliases_and_numbers() -> None:
    mentions = entity_mentions(
        ["Hey Mel, how is Melanie?", "Melanie ran 10 km in 2023.", "Great. Mel agreed.", "the end"]
    )
    assert mentions == [
        {"n:melanie"},
        {"n:melanie", "#:10", "#:2023"},  # a sentence start counts once the name is known
        {"n:melanie"},
        set(),
    ]


def test_invalid_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        HiMGAMemory(0)
    with pytest.raises(ValueError, match="entity must be a finite number"):
        HiMGAWeights(entity=-1)
    with pytest.raises(ValueError, match="turn must be a finite number"):
        HiMGAWeights(turn=math.nan)
    with pytest.raises(ValueError, match="seeds must be"):
        HiMGAWeights(seeds=0)
    assert repr(HiMGAMemory(3)).startswith("HiMGAMemory(k=3, weights=HiMGAWeights(turn=")


# -- laws ----------------------------------------------------------------------------------

WORDS = ["Porto", "sister", "chess", "won", "May", "2023", "dish", "?", "the", "Mel", "Melanie"]
turn_texts = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
conversations = st.lists(
    st.tuples(
        st.sampled_from([None, "2023-05-08", "1:56 pm on 8 August, 2023"]),
        st.lists(st.tuples(st.sampled_from(["Ann", "Bo"]), turn_texts), min_size=1, max_size=5),
    ),
    min_size=1,
    max_size=4,
)
weight_sets = st.builds(
    HiMGAWeights,
    **{
        field.name: st.sampled_from([0.0, 0.3, 1.0])
        for field in dataclasses.fields(HiMGAWeights)
        if field.name != "seeds"
    },
    seeds=st.integers(1, 5),
)


def build(conversation: list[tuple[str | None, list[tuple[str, str]]]]) -> list[Session]:
    return [
        Session(
            f"s{n}",
            [Message(role, text, f"D{n}:{i}") for i, (role, text) in enumerate(turns)],
            date,
        )
        for n, (date, turns) in enumerate(conversation)
    ]


@given(conversation=conversations, weights=weight_sets, query=turn_texts, k=st.integers(0, 30))
def test_search_ranks_ingested_turns_best_first_deterministically(
    conversation: list[tuple[str | None, list[tuple[str, str]]]],
    weights: HiMGAWeights,
    query: str,
    k: int,
) -> None:
    sessions = build(conversation)
    memory = memory_of(sessions, weights)
    hits = memory.search(query, k)
    held = {message.turn_id for session in sessions for message in session.messages}
    assert len(hits) <= k
    assert len({hit.turn_id for hit in hits}) == len(hits)
    assert {hit.turn_id for hit in hits} <= held
    scores = [hit.score for hit in hits]
    assert all(math.isfinite(score) and score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)
    assert memory_of(sessions, weights).search(query, k) == hits  # another instance agrees
    assert memory.search(query, k) == hits  # and so does a second query
    # a shorter search is a prefix of a longer one
    assert memory.search(query, max(k - 1, 0)) == hits[: max(k - 1, 0)]
    memory.reset()
    assert memory.search(query, k) == []


@given(
    conversation=conversations,
    activation=st.lists(st.floats(0, 1), min_size=20, max_size=20),
)
def test_each_edge_type_spreads_along_its_normalised_graph(
    conversation: list[tuple[str | None, list[tuple[str, str]]]], activation: list[float]
) -> None:
    index = memory_of(build(conversation)).index()
    seeds = np.array(activation[: index.size])[None, :]
    spread = index.propagate(seeds)
    assert "graphs" not in vars(index)  # propagation never builds the (quadratic) graphs
    for row, (name, graph) in enumerate(index.graphs.items()):
        dense = graph.toarray()
        if name != "qa":  # qa is directed and spreads unnormalised, question to answer
            degree = dense.sum(axis=1)
            scale = np.divide(1.0, np.sqrt(degree), out=np.zeros_like(degree), where=degree > 0)
            dense = scale[:, None] * dense * scale[None, :]
        np.testing.assert_allclose(spread[row], seeds @ dense.T, atol=1e-12, err_msg=name)


# -- with an embedder ----------------------------------------------------------------------


def test_an_embedder_adds_a_dense_level_and_semantic_edges() -> None:
    from himga.embed import HashEmbedder

    sessions = [
        Session("s1", [*filler(1, 8), Message("Bo", "My runner friends train daily.", "R")])
    ]
    query = "running"  # stems to "run": no lexical match with "runner" anywhere
    assert ids(memory_of(sessions), query) == []
    memory = HiMGAMemory(weights=HiMGAWeights(dense=1.0), embedder=HashEmbedder(dim=1024))
    for message in sessions[0].messages:
        memory.ingest(message, sessions[0])
    assert ids(memory, query, 1) == ["R"]  # shares character trigrams with "runner"
    semantic = memory.index().graphs["semantic"].toarray()
    assert (semantic == semantic.T).all()
    assert ((semantic > 0).sum(axis=1) >= 5).all()  # every turn keeps its 5 nearest
    assert "embedder='hash-1024'" in repr(memory)
    memory.reset()
    assert memory.search(query, 5) == []


class TestHiMGAMemoryWithEmbedderContract(MemoryContract):
    deterministic = True

    @staticmethod
    def factory() -> HiMGAMemory:
        from himga.embed import HashEmbedder

        return HiMGAMemory(embedder=HashEmbedder(dim=32))


class ConceptEmbedder:
    """Words of one concept share a direction; every other word has its own (crc32 slot)."""

    def __init__(self, concepts: dict[str, int]) -> None:
        self.concepts = concepts
        self.calls: list[tuple[list[str], str]] = []

    model_id = "concepts"
    dim = 4096

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls.append((list(texts), kind))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                slot = self.concepts.get(word)
                out[row, slot if slot is not None else 64 + zlib.crc32(word.encode()) % 4000] += 1
            norm = np.linalg.norm(out[row])
            out[row] /= norm if norm else 1.0
        return out


def expanding_memory(
    sessions: Sequence[Session], embedder: ConceptEmbedder, weights: HiMGAWeights
) -> HiMGAMemory:
    memory = HiMGAMemory(weights=weights, embedder=embedder)
    for session in sessions:
        for message in session.messages:
            memory.ingest(message, session)
    return memory


def test_a_query_is_expanded_by_the_conversations_nearest_words_but_never_by_a_name() -> None:
    # "martina" is as near "martial" as "taekwondo" is: only the name's exclusion keeps
    # Martina's every turn (her name is in each, as their speaker) and M out of the answer.
    embedder = ConceptEmbedder({"martial": 0, "taekwondo": 0, "martina": 0})
    sessions = [
        Session(
            "s1",
            [
                *[Message("Martina", m.content, m.turn_id) for m in filler(1, 6)],
                Message("Bo", "Thanks Martina, see you soon.", "M"),
                Message("Bo", "I got my black belt in taekwondo.", "T"),
            ],
        )
    ]
    query = "Who practises martial arts?"  # no word of it is in the conversation
    lexical = HiMGAWeights(dense=0.0, semantic=0.0)  # the words alone, no cosine
    alone = dataclasses.replace(lexical, temporal=0.0, membership=0.0, qa=0.0, entity=0.0)
    unexpanded = dataclasses.replace(alone, expansion=0.0)
    assert ids(expanding_memory(sessions, embedder, unexpanded), query) == []
    assert ids(expanding_memory(sessions, embedder, alone), query) == ["T"]  # nothing spreads
    assert ids(expanding_memory(sessions, embedder, lexical), query)[0] == "T"


def test_each_word_is_embedded_once_per_memory() -> None:
    embedder = ConceptEmbedder({})
    memory = expanding_memory([Session("s1", filler(1, 7))], embedder, HiMGAWeights())
    memory.search("weather", 3)
    first = {word for texts, kind in embedder.calls[1:] if kind == "query" for word in texts}
    assert {"weather", "traffic", "fine", "today"} <= first  # content words of the turns
    assert not first & {"the", "was", "ann", "bo"}  # stopwords and speakers' names are not
    embedder.calls.clear()
    memory.ingest(Message("Bo", "The tortellini was fine today.", "N"), Session("s1", []))
    memory.search("weather", 3)
    words_embedded = [texts for texts, kind in embedder.calls if kind == "query"]
    assert words_embedded == [["tortellini"], ["weather"]]  # the new word, then the query


@settings(max_examples=30)
@given(conversation=conversations, weights=weight_sets, query=turn_texts)
def test_without_dense_semantic_and_expansion_an_embedder_changes_no_ranking(
    conversation: list[tuple[str | None, list[tuple[str, str]]]],
    weights: HiMGAWeights,
    query: str,
) -> None:
    from himga.embed import HashEmbedder

    weights = dataclasses.replace(weights, dense=0.0, semantic=0.0, expansion=0.0)
    sessions = build(conversation)
    embedded = HiMGAMemory(weights=weights, embedder=HashEmbedder(dim=64))
    for session in sessions:
        for message in session.messages:
            embedded.ingest(message, session)
    assert embedded.search(query, 20) == memory_of(sessions, weights).search(query, 20)

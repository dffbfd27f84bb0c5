"""MAGMA: the graph worked out by hand, retrieval through links, the LLM build, the kit."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from himga.benchmarks import load_dataset
from himga.data.schema import Message, Session
from himga.llm import FakeLLMServer, SDKClient, get_client
from himga.memory import MagmaMemory, MagmaPaperMemory, SearchableMemory, load_memory
from himga.memory._magma._dates import ResolvedDate, resolve_dates
from himga.memory._magma._extract import extract_entities
from himga.memory._magma._graph import Edge
from himga.memory._magma._retrieve import classify_intent, classify_query
from himga.testing import MemoryContract, check_memory
from tests.magma_support import magma_responder

MAY_8 = "1:56 pm on 8 May, 2023"
MAY_10 = "9:00 am on 10 May, 2023"


def _session(session_id: str, date: str, turns: Sequence[tuple[str, str]]) -> Session:
    k = session_id.removeprefix("S")
    messages = [Message(role, text, f"D{k}:{n}") for n, (role, text) in enumerate(turns, 1)]
    return Session(session_id, messages, date)


def _ingest(memory: MagmaMemory, sessions: Sequence[Session]) -> None:
    for session in sessions:
        for message in session.messages:
            memory.ingest(message, session)


class MarkerEmbedder:
    """Vectors chosen by hand: the first marker a text contains picks its row."""

    model_id = "markers"

    def __init__(self, rows: Mapping[str, Sequence[float]], dim: int) -> None:
        self.rows = rows
        self.dim = dim

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for marker, row in self.rows.items():
                if marker in text:
                    out[i, : len(row)] = row
                    break
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1, norms)).astype(np.float32)


def _unit(dim: int, *pairs: tuple[int, float]) -> list[float]:
    row = [0.0] * dim
    for axis, value in pairs:
        row[axis] = value
    return row


# -- the graph of a scripted conversation, worked out by hand ---------------------------

HAND_SESSIONS = [
    _session(
        "S1",
        MAY_8,
        [
            ("Ann", "Did you meet Bob at the lake?"),  # 0
            ("Cy", "Yes. Was Bob there with Dana?"),  # 1
            ("Cy", "Dana was not, but Bob was fishing."),  # 2
        ],
    ),
    _session(
        "S2",
        MAY_10,
        [
            ("Ann", "Bob told me about it."),  # 3
            ("Cy", "Dana bought a kayak."),  # 4
        ],
    ),
]
# 0 and 3 point the same way; 1, 2 and 4 are orthogonal to everything.
HAND_EMBEDDER = MarkerEmbedder(
    {
        "meet Bob": _unit(4, (0, 1.0)),
        "Was Bob": _unit(4, (1, 1.0)),
        "fishing": _unit(4, (2, 1.0)),
        "told me": _unit(4, (0, 1.0)),
        "kayak": _unit(4, (3, 1.0)),
    },
    dim=4,
)


def _edges(memory: MagmaMemory, kind: str) -> dict[tuple[int, int], float]:
    return {(e.source, e.target): round(e.weight, 6) for e in memory.graph.edges if e.kind == kind}


def test_the_graph_of_a_scripted_conversation_is_the_one_worked_out_by_hand() -> None:
    memory = MagmaMemory(embedder=HAND_EMBEDDER)
    _ingest(memory, HAND_SESSIONS)
    nodes = memory.nodes
    assert [n.turn_id for n in nodes] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [n.session for n in nodes] == [0, 0, 0, 1, 1]
    assert [n.event.entities for n in nodes] == [
        ("Bob",),
        ("Bob", "Dana"),
        ("Dana", "Bob"),
        ("Bob",),
        ("Dana",),
    ]
    # turn n of a session is stamped n hours after the session's start
    assert [n.timestamp for n in nodes] == [
        datetime(2023, 5, 8, 14, 56),
        datetime(2023, 5, 8, 15, 56),
        datetime(2023, 5, 8, 16, 56),
        datetime(2023, 5, 10, 10, 0),
        datetime(2023, 5, 10, 11, 0),
    ]
    assert _edges(memory, "precedes") == {(0, 1): 1, (1, 2): 1, (2, 3): 1, (3, 4): 1}
    assert _edges(memory, "succeeds") == {(1, 0): 1, (2, 1): 1, (3, 2): 1, (4, 3): 1}
    near, middle, far = 1 / 1.5, 1 / 2, 1 / 2.5
    context = {(0, 1): near, (0, 2): middle, (0, 3): far, (1, 2): near, (1, 3): middle}
    context |= {(1, 4): far, (2, 3): near, (2, 4): middle, (3, 4): near}
    assert _edges(memory, "context") == {
        **{pair: round(w, 6) for pair, w in context.items()},
        **{(b, a): round(w, 6) for (a, b), w in context.items()},
    }
    assert _edges(memory, "similar") == {(0, 3): 1.0, (3, 0): 1.0}
    assert _edges(memory, "response_to") == {(0, 1): 0.8, (2, 3): 0.8, (3, 4): 0.8}
    # 0 and 1 ask; 1 is followed by its own speaker
    assert _edges(memory, "answered_by") == {(0, 1): 0.85, (1, 2): 0.7}
    bob = {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    dana = {(1, 2), (1, 4), (2, 4)}
    assert _edges(memory, "same_entity") == dict.fromkeys(bob | dana, 0.9)
    # within 24 h: the turns of each session, 1 or 2 hours apart; the sessions are 2 days apart
    close = {(0, 1): 1 / 2, (0, 2): 1 / 3, (1, 2): 1 / 2, (3, 4): 1 / 2}
    assert _edges(memory, "temporally_close") == {p: round(w, 6) for p, w in close.items()}
    assert _edges(memory, "belongs_to_session") == {
        (0, 0): 1,
        (1, 0): 1,
        (2, 0): 1,
        (3, 1): 1,
        (4, 1): 1,
    }
    assert _edges(memory, "causal") == {}
    assert {e.kind for e in memory.graph.edges} == {
        "precedes",
        "succeeds",
        "context",
        "similar",
        "response_to",
        "answered_by",
        "same_entity",
        "temporally_close",
        "belongs_to_session",
    }


def test_link_windows_stop_at_four_mentions_nine_turns_and_three_similar() -> None:
    # every turn names Zed, is within the hour of the others and shares all its words
    turns = [("Ann" if n % 2 else "Cy", "Zed rowed the boat") for n in range(12)]
    memory = MagmaMemory()
    _ingest(
        memory,
        [Session("S1", [Message(r, t, f"D1:{n}") for n, (r, t) in enumerate(turns)], "2023-05-08")],
    )
    assert {j for (i, j) in _edges(memory, "same_entity") if i == 0} == {1, 2, 3, 4}
    assert {j for (i, j) in _edges(memory, "temporally_close") if i == 0} == set(range(1, 10))
    # the speaker is part of the embedded text: Ann's other turns tie at cosine 1; earliest win
    assert {j for (i, j) in _edges(memory, "similar") if i == 5} == {1, 3, 7}


conversation = st.lists(
    st.tuples(
        st.sampled_from(["Ann", "Cy"]),
        st.lists(
            st.sampled_from(["Bob", "Dana", "kayak", "lake", "went", "yesterday?"]),
            min_size=1,
            max_size=6,
        ).map(" ".join),
    ),
    min_size=0,
    max_size=14,
)


@given(conversation, st.integers(1, 3))
def test_every_link_obeys_its_rule(turns: list[tuple[str, str]], n_sessions: int) -> None:
    sessions = [
        _session(f"S{k + 1}", f"{k + 1}:00 pm on {k * 3 + 1} May, 2023", turns[k::n_sessions])
        for k in range(n_sessions)
    ]
    memory = MagmaMemory()
    _ingest(memory, sessions)
    nodes = memory.nodes
    n = len(nodes)
    edges: list[Edge] = memory.graph.edges
    for edge in edges:
        i, j = edge.source, edge.target
        assert 0 <= i < n
        if edge.kind == "belongs_to_session":
            assert j == nodes[i].session
            continue
        assert 0 <= j < n
        assert i != j
        if edge.kind in ("precedes", "response_to", "answered_by"):
            assert j == i + 1
        if edge.kind == "succeeds":
            assert j == i - 1
        if edge.kind == "context":
            assert 1 <= abs(i - j) <= 3
        if edge.kind == "same_entity":
            shared = {e.casefold() for e in nodes[i].event.entities} & {
                e.casefold() for e in nodes[j].event.entities
            }
            assert shared
            assert i < j
        if edge.kind == "temporally_close":
            assert i < j <= i + 9
        if edge.kind == "similar":
            assert edge.weight > 0.5
    assert sum(e.kind == "precedes" for e in edges) == max(0, n - 1)
    assert sum(e.kind == "belongs_to_session" for e in edges) == n
    assert sum(e.kind == "context" for e in edges) == sum(2 * min(3, n - 1 - i) for i in range(n))


# -- retrieval ---------------------------------------------------------------------------


def _entity_hop_conversation(answer_entity: str) -> list[Session]:
    distractors = [
        ("Cy", f"the kayak paint colour was great, version {k}, the painted kayak colour")
        for k in range(40)
    ]
    anchor = ("Ann", "Dana keeps a painted kayak colour chart")
    filler = [("Cy", f"filler chat number {k}") for k in range(6)]
    answer = ("Ann", f"{answer_entity} painted it green")
    return [
        _session("S1", MAY_8, [*distractors, anchor]),
        _session("S2", "2:00 pm on 20 May, 2023", [*filler, answer]),
    ]


def _entity_hop_embedder() -> MarkerEmbedder:
    dim = 64
    rows = {f"version {k}": _unit(dim, (0, 0.45), (k + 1, 0.89)) for k in range(40)}
    rows["colour chart"] = _unit(dim, (0, 0.5), (41, 0.866))
    rows["green"] = _unit(dim, (0, 0.38), (42, 0.925))
    rows |= {f"number {k}": _unit(dim, (43 + k, 1.0)) for k in range(6)}
    rows["Which colour"] = _unit(dim, (0, 1.0))
    return MarkerEmbedder(rows, dim)


def test_retrieval_reaches_an_answer_only_a_same_entity_link_leads_to() -> None:
    question = "Which colour was the kayak painted?"
    found = {}
    for name in ("Dana", "Zed"):  # Zed: the same turn without the shared entity
        memory = MagmaMemory(embedder=_entity_hop_embedder())
        _ingest(memory, _entity_hop_conversation(name))
        links = {e.kind for e in memory.graph.edges if 47 in (e.source, e.target)}
        found[name] = [hit.turn_id for hit in memory.search(question, 200)]
        if name == "Dana":
            assert (40, 47) in _edges(memory, "same_entity")
            assert links == {"precedes", "succeeds", "context", "response_to", "same_entity",
                             "temporally_close", "belongs_to_session"}  # fmt: skip
    assert "D2:7" in found["Dana"]
    assert "D2:7" not in found["Zed"]
    assert "D1:41" in found["Zed"]  # the anchor itself is found either way


def test_retrieve_formats_key_facts_with_resolved_dates() -> None:
    memory = MagmaMemory()
    _ingest(
        memory,
        [
            _session(
                "S1", MAY_8, [("Cy", "I went to the pottery class yesterday."), ("Ann", "Nice!")]
            )
        ],
    )
    context = memory.retrieve("When did Cy go to the pottery class?")
    assert context.startswith(
        "Memories, most relevant first:\n1. [1:56 pm on 8 May, 2023] Cy: I went"
    )
    assert "'yesterday' = 7 May 2023" in context
    assert "Key facts:\n- Cy: I went to the pottery class yesterday." in context
    assert memory.retrieve("") == ""
    assert memory.retrieve("?!") == ""
    assert MagmaMemory().retrieve("pottery") == ""


@pytest.mark.parametrize(
    ("question", "query_type"),
    [
        ("When did Caroline go to the support group?", "temporal"),
        ("How long has Ann been painting?", "temporal"),
        ("What is the relationship between Ann and Cy?", "multi_hop"),
        ("What activities does Ann do?", "multi_hop"),
        ("What did Ann bake?", "activity"),
        ("Who gave Ann the book?", "entity"),
        ("Why did Cy quit?", "causal"),
        ("Where is the lake?", "location"),
        ("Would Ann likely enjoy hiking in the future?", "open_domain"),
        ("Which book is Ann reading?", "factual"),
        ("Tell me about hiking", "general"),
    ],
)
def test_query_type_comes_from_the_wording_alone(question: str, query_type: str) -> None:
    assert classify_query(question) == query_type


def test_paper_intents() -> None:
    assert classify_intent("Why did Cy quit?") == "why"
    assert classify_intent("When did Cy quit?") == "when"
    assert classify_intent("Who is Cy?") == "entity"


def test_dates_resolve_against_the_session_date() -> None:
    anchor = datetime(2023, 5, 8, 13, 56)
    assert resolve_dates("I ran three days ago and last Friday", anchor) == (
        ResolvedDate("three days ago", "5 May 2023"),
        ResolvedDate("last Friday", "5 May 2023"),
    )
    assert resolve_dates("we met on 7 June 2022, then in 2021", None) == (
        ResolvedDate("7 June 2022", "7 June 2022"),
        ResolvedDate("in 2021", "2021"),
    )
    assert resolve_dates("yesterday", None) == ()  # relative needs the session date


def test_entities_are_names_not_sentence_openers() -> None:
    text = "Hey Mel! Yesterday we saw The Eiffel Tower with James. Thanks, Ann."
    assert extract_entities(text, exclude=("Ann",)) == ("Mel", "Eiffel Tower", "James")


def test_registered_under_magma_and_magma_paper() -> None:
    assert load_memory("magma") is MagmaMemory
    assert load_memory("magma-paper") is MagmaPaperMemory
    assert isinstance(MagmaMemory(), SearchableMemory)
    assert repr(MagmaMemory(top_k=5)) == (
        "MagmaMemory(llm=None, vectors='tfidf', top_k=5, session_summaries=True, "
        "concurrency=None, max_attempts=3)"
    )


class TestMagmaContract(MemoryContract):
    deterministic = True
    factory = MagmaMemory


class TestMagmaPaperContract(MemoryContract):
    deterministic = True
    factory = MagmaPaperMemory


# -- with an LLM -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=magma_responder) as running:
        yield running


def _client(server: FakeLLMServer, cache: Path | None = None) -> SDKClient:
    return get_client(
        "anthropic", api_key="k", base_url=server.base_url, max_retries=0, cache=cache
    )


SLOPPY = [
    _session(
        "S1",
        MAY_8,
        [
            ("Ann", "I saw Bob at the lake yesterday."),
            ("Cy", "MALFORMED turn about Bob"),
            ("Ann", "FLAKY news: Dana moved to Paris."),
            ("Cy", "Great news for Dana."),
        ],
    ),
    _session("S2", MAY_10, [("Ann", "Bob sold his kayak.")]),
]


def test_the_llm_build_is_lazy_concurrent_and_survives_malformed_json(
    server: FakeLLMServer,
) -> None:
    server.reset_stats()
    server.latency = 0.05
    try:
        memory = MagmaMemory(_client(server), concurrency=4)
        _ingest(memory, SLOPPY)
        assert server.request_count == 0  # ingest only buffers
        context = memory.retrieve("Where did Dana move?")
    finally:
        server.latency = 0.0
    stats = memory.build_stats
    # 5 turns x 2 requests and 2 session summaries; both requests of the MALFORMED turn
    # take 2 more attempts (then the rules take over), those of the FLAKY turn 1 more
    assert stats.requests == server.request_count == 5 * 2 + 2 + 2 * 2 + 2 * 1
    assert (stats.malformed_replies, stats.degraded_turns, stats.failed_requests) == (8, 1, 0)
    assert stats.summaries == 2
    assert 1 < server.max_in_flight <= 4
    sources = [n.event.source for n in memory.nodes]
    assert sources == ["llm", "offline", "llm", "llm", "llm"]
    assert memory.nodes[0].event.dates == (ResolvedDate("yesterday", "7 May 2023"),)
    assert memory.nodes[0].event.narrative.startswith("Ann talked about")
    assert "Paris" in context
    assert "The speakers caught up on their news." in context
    assert stats.input_tokens > 0
    assert stats.output_tokens > 0


def test_failed_calls_degrade_to_the_rules_and_never_raise() -> None:
    with FakeLLMServer(responder=magma_responder, faults=[400] * 12) as failing:
        memory = MagmaMemory(_client(failing))
        _ingest(memory, SLOPPY)
        assert isinstance(memory.retrieve("Where did Dana move?"), str)
        assert failing.request_count == 12
    assert memory.build_stats.failed_requests == 5 * 2 + 2
    assert memory.build_stats.degraded_turns == 5
    assert memory.build_stats.summaries == 0
    assert all(n.event.source == "offline" for n in memory.nodes)


def test_a_cached_rebuild_costs_no_calls(server: FakeLLMServer, tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    counts = []
    for _ in range(2):
        server.reset_stats()
        memory = MagmaPaperMemory(_client(server, cache=cache))
        _ingest(memory, SLOPPY)
        memory.retrieve("Where did Dana move?")
        counts.append(server.request_count)
    assert counts[0] == 5 * 2 + 2 + 2 * 2 + 2 * 1 + 5  # and a causal request per node
    assert counts[1] == 0
    assert memory.build_stats.causal_links == 5
    assert {e.relation for e in memory.graph.edges if e.kind == "causal"} == {"leads_to"}


def test_building_inside_a_running_event_loop_works(server: FakeLLMServer) -> None:
    async def inside() -> str:
        memory = MagmaMemory(_client(server))
        _ingest(memory, SLOPPY[1:])
        return memory.retrieve("What did Bob sell?")

    assert "kayak" in asyncio.run(inside())


@pytest.mark.slow
def test_magma_with_the_fake_llm_passes_the_kit(server: FakeLLMServer) -> None:
    client = _client(server)
    check_memory(lambda: MagmaMemory(client), max_examples=4)
    check_memory(lambda: MagmaPaperMemory(client), max_examples=2)


@pytest.mark.filterwarnings("ignore::himga.data.EvidenceWarning")
def test_no_benchmark_speaker_name_occurs_in_the_magma_code(
    shared_datasets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    speakers = {name.casefold() for s in load_dataset("locomo") for name in s.speakers}
    assert len(speakers) >= 10
    package = Path(__file__).resolve().parents[2] / "src" / "himga" / "memory" / "_magma"
    for source in package.glob("*.py"):
        used = set(re.findall(r"[a-z]+", source.read_text("utf-8").casefold()))
        assert not speakers & used, f"{source.name} names {sorted(speakers & used)}"

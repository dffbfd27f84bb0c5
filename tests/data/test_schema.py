"""The schema's value objects: immutable, typed, and the seed's calls work as written."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.data.schema import Category, Message, QAPair, Sample, Session
from himga.testing import messages, sessions


def test_seed_calls_run_as_written() -> None:
    session = Session(session_id="s1", messages=[], date_str="2024-01-01")
    message = Message(role="user", content="I love hiking in the mountains.")
    assert session.messages == ()
    assert session.date == datetime(2024, 1, 1)
    assert message.turn_id is None


@given(messages())
def test_message_is_frozen(message: Message) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]


@given(st.lists(messages(), max_size=4))
def test_session_stores_messages_as_a_tuple(items: list[Message]) -> None:
    session = Session(session_id="s", messages=items)
    items.append(Message(role="user", content="later"))  # the caller's list may change...
    assert len(session.messages) == len(items) - 1  # ...the session may not
    assert isinstance(session.messages, tuple)


@given(sessions())
def test_sessions_are_equal_by_value(session: Session) -> None:
    twin = Session(
        session_id=session.session_id, messages=list(session.messages), date_str=session.date_str
    )
    assert twin == session
    assert hash(twin) == hash(session)


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21)),
        ("2024-01-01", datetime(2024, 1, 1)),
        ("sometime last spring", None),
    ],
)
def test_session_date_is_parsed_from_date_str(raw: str, parsed: datetime | None) -> None:
    session = Session(session_id="s", messages=[], date_str=raw)
    assert session.date == parsed
    assert session.date_str == raw  # the raw value is always kept


def test_explicit_date_wins_over_date_str() -> None:
    when = datetime(2020, 2, 2)
    assert Session(session_id="s", messages=[], date_str="2024-01-01", date=when).date == when


@pytest.mark.parametrize("code", [1, 2, 3, 4, 5])
def test_locomo_codes_round_trip(code: int) -> None:
    assert Category.from_locomo_code(code).locomo_code == code


def test_locomo_code_map_follows_the_official_scorer() -> None:
    assert Category.from_locomo_code(1) is Category.MULTI_HOP
    assert Category.from_locomo_code(4) is Category.SINGLE_HOP
    assert Category.from_locomo_code(5) is Category.ADVERSARIAL
    assert Category.MULTI_SESSION.locomo_code is None
    with pytest.raises(ValueError, match="unknown LoCoMo category code 6"):
        Category.from_locomo_code(6)


def test_gold_data_lives_apart_from_conversation_data() -> None:
    qa = QAPair(
        question_id="q1",
        question="Where does she hike?",
        answer="the mountains",
        category=Category.SINGLE_HOP,
        evidence=["D1:1"],
        evidence_turns=["D1:1"],
    )
    session = Session(session_id="s1", messages=[Message("A", "hi", "D1:1")])
    sample = Sample(
        sample_id="x", dataset="locomo", sessions=[session], qa_pairs=[qa], metadata={"k": 1}
    )
    assert qa.evidence == ("D1:1",)
    assert list(sample.iter_turns()) == [(session, session.messages[0])]
    assert {f.name for f in dataclasses.fields(Message)} == {"role", "content", "turn_id"}
    with pytest.raises(TypeError):
        sample.metadata["k"] = 2  # type: ignore[index]


@given(
    st.lists(sessions(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
def test_sample_pickles_to_an_equal_sample(
    history: list[Session], metadata: dict[str, int | str]
) -> None:
    # Ray ships samples to its workers; the read-only metadata must survive the trip.
    qa = QAPair(question_id="q", question="Where?", answer="Paris", category="single-hop")
    sample = Sample(
        sample_id="s",
        dataset="d",
        sessions=history,
        qa_pairs=[qa],
        speakers=["a"],
        question_date="2024-01-01",
        metadata=metadata,
    )
    twin = pickle.loads(pickle.dumps(sample))
    assert twin == sample
    assert dict(twin.metadata) == metadata

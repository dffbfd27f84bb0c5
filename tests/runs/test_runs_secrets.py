"""Secrets are redacted where they can appear, and only there; judge failures are failures.

Redaction is structural (issue 26): the error and reply text a run records,
URL query strings and header lines; never a blind replacement over the output
files, which rewrote model names, ids and JSON keys when a key was short.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga.eval import redact
from himga.eval.judge import offline_judge_responder
from himga.llm import ChatMessage, FakeLLMServer, offline_responder
from himga.memory import KeywordMemory

KEY = "sk-test-0123456789abcdefghij"
QUICK = ["--memory", "keyword", "--limit", "1", "--no-preflight", "--no-progress"]


@pytest.fixture(autouse=True)
def _data(shared_datasets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _timeless(path: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k not in ("retrieval_latency_s", "latency_s")}
        for r in _lines(path)
    ]


def test_redact_replaces_keys_query_credentials_and_headers_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    text = (
        f"APIError: bad key {KEY} at https://user:pw@api.example/v1?api-key=abc123&model=m "
        "(Authorization: Bearer tok123, x-api-key: tok456)"
    )
    assert redact(text) == (
        "APIError: bad key *** at https://***@api.example/v1?api-key=***&model=m "
        "(Authorization: Bearer ***, x-api-key: ***)"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "1")  # no provider's key: never replaced
    assert redact("HTTP 401 after 1 retry") == "HTTP 401 after 1 retry"


@pytest.mark.parametrize("secret", ["1", "x", "test", "locomo"])
def test_a_short_key_in_the_environment_changes_no_output(
    secret: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["eval", *QUICK, "--out", str(tmp_path / "plain")]) == 0
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    assert main(["eval", *QUICK, "--out", str(tmp_path / "keyed")]) == 0
    plain, keyed = tmp_path / "plain", tmp_path / "keyed"
    assert _timeless(keyed / "results.jsonl") == _timeless(plain / "results.jsonl")
    metrics = json.loads((keyed / "metrics.json").read_text("utf-8"))
    assert metrics == json.loads((plain / "metrics.json").read_text("utf-8"))
    manifest = json.loads((keyed / "manifest.json").read_text("utf-8"))
    assert manifest["dataset"]["name"] == "locomo"


def test_the_fake_llm_recipe_records_the_model_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(responder=offline_judge_responder) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "fake")
        argv = [*QUICK, "--llm", "anthropic", "--model", "fake", "--out", str(tmp_path / "r")]
        assert main(["eval", *argv]) == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text("utf-8"))
    assert manifest["llm"]["model"] == manifest["judge"]["model"] == "fake"
    assert {r["model"] for r in _lines(tmp_path / "r" / "results.jsonl")} == {"fake"}


def _leaky(messages: list[ChatMessage]) -> str:
    return f"the key is {KEY}, as you asked"


def test_a_key_echoed_by_the_llm_never_reaches_results_or_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(responder=_leaky) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        out = tmp_path / "r"
        argv = [*QUICK, "--llm", "openai", "--model", "m", "--no-judge", "--out", str(out)]
        assert main(["eval", *argv]) == 0
    for name in ("results.jsonl", "checkpoint.jsonl", "manifest.json", "metrics.json"):
        assert KEY not in (out / name).read_text("utf-8"), name
    assert {r["prediction"] for r in _lines(out / "results.jsonl")} == {
        "the key is ***, as you asked"
    }


def test_a_key_echoed_by_the_llm_never_persists_in_the_llm_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34 (9): results and checkpoint were redacted, the --llm-cache file kept the
    # raw reply. A rerun is still answered from the cache, with the same results.
    cache = tmp_path / "llm.sqlite"
    with FakeLLMServer(responder=_leaky) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        argv = [*QUICK, "--llm", "openai", "--model", "m", "--no-judge", "--llm-cache", str(cache)]
        assert main(["eval", *argv, "--out", str(tmp_path / "first")]) == 0
        asked = len(server.requests)
        assert main(["eval", *argv, "--out", str(tmp_path / "again")]) == 0
        assert len(server.requests) == asked  # every answer from the cache
    for name in (cache.name, f"{cache.name}-wal"):
        if (tmp_path / name).exists():
            assert KEY.encode() not in (tmp_path / name).read_bytes(), name
    with sqlite3.connect(cache) as db:
        stored = {text for (text,) in db.execute("SELECT text FROM replies")}
    assert stored == {"the key is ***, as you asked"}
    first, again = tmp_path / "first" / "results.jsonl", tmp_path / "again" / "results.jsonl"
    assert _timeless(again) == _timeless(first)


class KeyedMemory(KeywordMemory):
    """The keyword memory given the credentials an external memory takes."""

    def __init__(
        self, llm_api_key: str = "", base_url: str = "", config: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.llm_api_key, self.base_url, self.config = llm_api_key, base_url, config

    def __repr__(self) -> str:
        return f"KeyedMemory(llm_api_key={self.llm_api_key!r}, config={self.config!r})"


def test_secrets_in_memory_arguments_are_never_written_and_a_changed_one_is_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 34 (8): --memory-arg llm_api_key=sk-... was written in plain text into
    # manifest.json, the checkpoint header and report.md.
    nested = "nested-secret-0123456789"
    out = tmp_path / "r"
    argv = [*QUICK, "--memory", f"{__name__}:KeyedMemory", "--out", str(out)]
    secrets = [
        "--memory-arg",
        f"llm_api_key={KEY}",
        "--memory-arg",
        "base_url=https://user:hunter2pass@llm.example/v1",
        "--memory-arg",
        f'config={{"llm": {{"config": {{"api_key": "{nested}", "model": "m"}}}}}}',
    ]
    assert main(["eval", *argv, *secrets]) == 0
    assert main(["report", str(out)]) == 0
    for file in out.iterdir():
        text = file.read_bytes()
        for secret in (KEY, "hunter2pass", nested):
            assert secret.encode() not in text, (file.name, secret)
    memory = json.loads((out / "manifest.json").read_text("utf-8"))["memory"]
    assert memory["arguments"]["llm_api_key"].startswith("*** sha256:")
    assert memory["arguments"]["config"]["llm"]["config"]["model"] == "m"
    assert memory["arguments"]["base_url"].startswith("https://***@llm.example/v1")
    assert "llm_api_key='*** sha256:" in memory["repr"]
    capsys.readouterr()
    # The same secret resumes; another is told apart, without either being shown.
    assert main(["eval", *argv, *secrets, "--resume"]) == 0
    other = [*secrets[:1], "llm_api_key=sk-other-0123456789abcdefghij", *secrets[2:]]
    assert main(["eval", *argv, *other, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "memory_arguments.llm_api_key" in err
    assert KEY not in err
    assert "sk-other" not in err
    # Printed errors name the argument, never its value.
    bad = ["eval", *QUICK, "--memory", "bm25", "--memory-arg", f"api_key={KEY}"]
    assert main([*bad, "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "api_key='*** sha256:" in err
    assert KEY not in err


def _no_verdict(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt or "Model Response:" in prompt:
        return "I would rather not say."
    return offline_responder(messages)


def test_failed_judge_calls_exit_non_zero_and_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLLMServer(responder=_no_verdict) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        out = tmp_path / "r"
        assert main(["eval", *QUICK, "--llm", "openai", "--model", "m", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    questions = len(_lines(out / "results.jsonl"))
    assert f"0 LLM errors, {questions} judge errors" in captured.out
    assert f"incomplete: {questions} answers could not be judged" in captured.err
    assert all(r["judge_error"] for r in _lines(out / "results.jsonl"))

"""Run records hold what a run met, whatever it met (issue 34): text that is not
valid UTF-8 (a lone surrogate) in the data or in an LLM reply, resumes that keep
the original record, and commands that never write over a file of a run directory."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from himga.llm import ChatMessage, FakeLLMServer, offline_responder
from himga.runs import RunDir
from tests.cli_support import QUICK, conversation, offline_cli, run_cli

LONE = "\ud800"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _timeless(path: Path) -> list[dict[str, Any]]:
    drop = ("retrieval_latency_s", "latency_s")
    return [{k: v for k, v in r.items() if k not in drop} for r in _lines(path)]


def _surrogate_reply(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt or "Model Response:" in prompt:
        return offline_responder(messages)
    return f"an answer {LONE} with a lone surrogate"


def test_a_lone_surrogate_in_the_data_or_a_reply_is_recorded_and_resumes(
    tmp_path: Path,
) -> None:
    # Issue 34 (15): a lone surrogate (valid JSON) in a question or an LLM reply stopped
    # the run with a UnicodeEncodeError at the first checkpoint write, and every resume.
    with offline_cli(tmp_path) as patch:
        dataset = [conversation("conv-1"), conversation("conv-2")]
        dataset[0]["qa"][0]["question"] = f"When did Caroline {LONE} go?"
        (tmp_path / "data" / "locomo" / "locomo10.json").write_text(json.dumps(dataset), "utf-8")
        cache = tmp_path / "llm.sqlite"
        with FakeLLMServer(responder=_surrogate_reply) as server:
            patch.setenv("OPENAI_BASE_URL", server.openai_base_url)
            llm = ["--llm", "openai", "--model", "m", "--llm-cache", str(cache)]
            first, second = tmp_path / "first", tmp_path / "second"
            code, err = run_cli(["eval", *QUICK, *llm, "--out", str(first)])
            assert code == 0, err
            checkpoint = (first / "checkpoint.jsonl").read_text("utf-8").splitlines()
            (first / "checkpoint.jsonl").write_text("\n".join(checkpoint[:3]) + "\n", "utf-8")
            code, err = run_cli(["eval", *QUICK, *llm, "--out", str(first), "--resume"])
            assert code == 0, err
            calls = len(server.requests)
            # Answered from the cache: the same replies, surrogate included.
            code, err = run_cli(["eval", *QUICK, *llm, "--out", str(second)])
            assert code == 0, err
            assert len(server.requests) == calls
        code, err = run_cli(["eval", *QUICK, "--out", str(tmp_path / "offline")])
        assert code == 0, err
        for run in (first, second):
            assert run_cli(["report", str(run)])[0] == 0
    results = _lines(first / "results.jsonl")
    assert results[0]["question"] == f"When did Caroline {LONE} go?"
    assert {r["prediction"] for r in results} == {f"an answer {LONE} with a lone surrogate"}
    assert _timeless(first / "results.jsonl") == _timeless(second / "results.jsonl")
    assert RunDir(first).read().results[0].question.endswith(f"{LONE} go?")
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] > 0


def test_a_resume_keeps_the_record_of_every_invocation_before_it(tmp_path: Path) -> None:
    # Issue 34 (5): --resume on a finished run rewrote manifest.json (start, wall time,
    # "N results resumed", no calls): the original run's record was lost.
    out = tmp_path / "run"
    with offline_cli(tmp_path):
        assert run_cli(["eval", *QUICK, "--out", str(out)])[0] == 0
        original = json.loads((out / "manifest.json").read_text("utf-8"))
        assert original["history"] == []
        for _ in range(2):
            code, err = run_cli(["eval", *QUICK, "--out", str(out), "--resume"])
            assert code == 0, err
        latest = json.loads((out / "manifest.json").read_text("utf-8"))
        assert run_cli(["report", str(out)])[0] == 0
    first, second = latest["history"]
    assert first == {k: v for k, v in original.items() if k != "history"}
    assert second["resumed"] == latest["resumed"] == original["counts"]["questions"]
    assert "history" not in second  # each record kept once, not nested
    assert RunDir(out).read().manifest.history[0]["started_at"] == original["started_at"]
    report = (out / "report.md").read_text("utf-8")
    assert (
        f"Invocation 1 before it (its manifest is kept in `history`): started {original['started_at']}"
        in report
    )

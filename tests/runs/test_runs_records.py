"""Run records hold what a run met, whatever it met (issue 34): text that is not
valid UTF-8 (a lone surrogate) in the data or in an LLM reply, resumes that keep
the original record, and commands that never write over a file of a run directory."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from himga.llm import ChatMessage, FakeLLMServer, offline_responder
from himga.runs import RunDir
from tests.cli_support import QUICK, conversation, offline_cli, run_cli

LONE = "\ud800"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
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


@pytest.mark.slow
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
    kept = "Invocation 1 before it (its manifest is kept in `history`): started"
    assert f"{kept} {original['started_at']}" in report


def _files(run: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(run.iterdir())}


def test_no_command_writes_over_a_file_of_a_run_directory(tmp_path: Path) -> None:
    # Issue 34 (6): `report RUN --out RUN/checkpoint.jsonl` replaced the checkpoint with
    # markdown and exited 0. Every command that writes a file: report, compare --plot,
    # eval --llm-cache (merge and eval --out take only new or their own directories).
    runs = [tmp_path / "a", tmp_path / "b"]
    with offline_cli(tmp_path):
        for run in runs:
            assert run_cli(["eval", *QUICK, "--out", str(run)])[0] == 0
        assert run_cli(["report", str(runs[0])])[0] == 0  # its own report.md: written
        before = [_files(run) for run in runs]
        attempts = [
            ["report", str(runs[0]), "--out", str(runs[0] / "checkpoint.jsonl")],
            ["report", str(runs[1]), "--out", str(runs[0] / "report.md")],  # another run's
            ["report", str(runs[1]), "--out", str(runs[0] / ".himga-run")],
            [
                "compare",
                *map(str, runs),
                "--resamples",
                "10",
                "--plot",
                str(runs[0] / "report.png"),
            ],
            ["eval", *QUICK, "--llm", "openai", "--llm-cache", str(runs[1] / "metrics.json")],
        ]
        for argv in attempts:
            code, err = run_cli(argv)
            assert code == 2, argv
            assert len(err.strip().splitlines()) == 1, err
            assert "run directory" in err or "run's" in err or ".md" in err, err
        assert [_files(run) for run in runs] == before


@pytest.mark.slow
def test_report_and_compare_outputs_are_what_their_names_say(tmp_path: Path) -> None:
    # Issue 34 (24): `report --out x.png` wrote markdown into the picture; `compare --plot
    # out.json` was a traceback; `report` trusted an edited metrics.json (compare did not).
    pytest.importorskip("matplotlib")
    pytest.importorskip("numpy")
    runs = [tmp_path / "a", tmp_path / "b"]
    with offline_cli(tmp_path):
        for run in runs:
            assert run_cli(["eval", *QUICK, "--out", str(run)])[0] == 0
        code, err = run_cli(["report", str(runs[0]), "--out", str(tmp_path / "x.png")])
        assert code == 2
        assert "give a .md file name" in err
        assert not (tmp_path / "x.png").exists()
        compare = ["compare", *map(str, runs), "--resamples", "10"]
        code, err = run_cli([*compare, "--plot", str(tmp_path / "out.json")])
        assert code == 2
        assert "not a figure format" in err
        assert "Traceback" not in err
        assert run_cli([*compare, "--plot", str(tmp_path / "out.svg")])[0] == 0
        assert (tmp_path / "out.svg").read_text("utf-8").lstrip().startswith("<?xml")

        assert run_cli(["report", str(runs[0])])[0] == 0
        honest = (runs[0] / "report.md").read_text("utf-8")
        metrics = json.loads((runs[0] / "metrics.json").read_text("utf-8"))
        metrics["overall"]["recall@10"] = 0.987654
        (runs[0] / "metrics.json").write_text(json.dumps(metrics), "utf-8")
        code, err = run_cli(["report", str(runs[0])])
        assert code == 0
        assert "metrics.json differs from what results.jsonl measures" in err
    assert (runs[0] / "report.md").read_text("utf-8") == honest
    assert "0.988" not in honest


@pytest.mark.slow
@pytest.mark.integration
def test_paths_no_file_system_holds_and_names_not_in_utf8_are_one_line(tmp_path: Path) -> None:
    # Issue 34 (24): a 300-character path component was an OSError traceback (File name
    # too long) in eval, report, compare and merge; a file name that is not UTF-8 was a
    # UnicodeEncodeError traceback where a command printed it.
    long = str(tmp_path / ("x" * 300))
    with offline_cli(tmp_path) as patch:
        runs = [tmp_path / "a", tmp_path / "b"]
        for run in runs:
            assert run_cli(["eval", *QUICK, "--out", str(run)])[0] == 0
        pair = [str(run) for run in runs]
        for argv in (
            ["eval", *QUICK, "--out", long],
            ["eval", *QUICK, "--data-path", long],
            ["eval", *QUICK, "--llm", "openai", "--llm-cache", long],
            ["report", long],
            ["report", pair[0], "--out", f"{long}.md"],
            ["compare", pair[0], long],
            ["compare", *pair, "--plot", f"{long}.png"],
            ["merge", *pair, "--out", long],
            ["datasets", "locomo", "--path", long],
        ):
            code, err = run_cli(argv)
            assert code == 2, argv
            assert "bytes (at most 255)" in err.strip().splitlines()[-1], argv
        # Real processes: their stdout is strict UTF-8, as a terminal's or a pipe's is.
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        patch.undo()
        named = tmp_path / "caf\udce9"  # the bytes b"caf\xe9": Latin-1, not UTF-8
        for argv in (
            ["eval", *QUICK, "--out", str(named)],
            ["report", str(named)],
            ["compare", str(named), pair[1], "--resamples", "10", "--plot", f"{named}.png"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "himga", *argv], env=env, capture_output=True, check=False
            )
            assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
            assert b"Traceback" not in done.stderr
    assert (named / "report.md").read_text("utf-8").count("caf\\udce9") >= 1


def test_a_write_that_fails_names_what_it_could_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34 (24): a disk-full message said "cannot write a file" when the error named
    # none (SQLite's never do; only the LLM cache is SQLite).
    import himga.runs

    out, cache = tmp_path / "run", tmp_path / "llm.sqlite"
    failures = [
        (sqlite3.OperationalError("database or disk is full"), str(cache)),
        (OSError(errno.ENOSPC, "No space left on device"), f"into {out}"),
    ]
    with offline_cli(tmp_path):
        for failure, named in failures:

            def fail(*args: object, failure: Exception = failure, **kwargs: object) -> None:
                raise failure

            monkeypatch.setattr(himga.runs, "evaluate_run", fail)
            argv = ["eval", *QUICK, "--llm", "openai", "--llm-cache", str(cache)]
            code, err = run_cli([*argv, "--out", str(out)])
            assert code == 2
            assert f"cannot write {named}: " in err
            assert "a file" not in err

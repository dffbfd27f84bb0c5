"""``himga eval``: the offline default, the LLM path, the run directory, resume, no secrets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from himga._cli import main
from himga.llm import FakeLLMServer
from tests.data_fixtures import read_run
from tests.fake_llm_support import keyword_responder

SECRET = "sk-ant-SECRET-do-not-log-4242"


def test_offline_run_prints_recall_table_and_writes_the_run_directory(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(["eval", "--memory", "keyword", "--limit", "1", "--out", str(out), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    header = printed.splitlines()[0].split()
    assert header[:3] == ["category", "n", "errors"]
    assert {"ctx-any", "R@10", "R@50"} <= set(header)
    assert header[-3:] == ["ret-p50-ms", "ret-p95-ms", "ctx-chars"]  # every memory has them
    assert "F1" not in header  # no answers offline
    assert "overall (no adversarial)" in printed

    results, metrics, manifest = read_run(out)
    assert len(results) == metrics["counts"]["questions"] == manifest["dataset"]["questions"]
    assert all(r["prediction"] is None and r["ranked_turn_ids"] is not None for r in results)
    assert {r["sample_id"] for r in results} == {"conv-26"}
    locomo = data_dir / "locomo" / "locomo10.json"
    assert manifest["dataset"]["sha256"] == hashlib.sha256(locomo.read_bytes()).hexdigest()
    memory = manifest["memory"]
    assert {k: memory[k] for k in ("spec", "target", "arguments", "class", "repr")} == {
        "spec": "keyword",
        "target": "himga.memory:KeywordMemory",
        "arguments": {},
        "class": "himga.memory._keyword:KeywordMemory",
        "repr": "KeywordMemory(k=10)",
    }
    assert memory["distribution"] == "himga"
    assert len(memory["source_sha256"]) == 64
    assert manifest["arguments"]["judge"] is False  # nothing was judged offline
    assert manifest["judge"] is None
    assert manifest["llm"] is None
    assert set(manifest["prompt_hashes"]["answer"]) == {
        "answer_with_context",
        "answer_without_context",
        "date_line",
    }
    assert manifest["wall_time_s"] >= 0


def test_memory_given_as_module_attr(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["eval", "--memory", "himga.memory:NullMemory", "--limit", "1", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    results, metrics, _ = read_run(out)
    assert all(r["ranked_turn_ids"] is None and r["context"] == "" for r in results)
    assert metrics["overall"]["context_recall"] == 0.0


def test_model_without_llm_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--model", "m"]) == 2
    assert "--llm" in capsys.readouterr().err


_responder = keyword_responder(
    [("Generated answer:", '{"label": "WRONG"}'), ("Answer yes or no only.", "no")], "Caroline"
)


@pytest.mark.slow
def test_llm_run_answers_judges_resumes_and_never_writes_the_key(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    argv = [
        "eval",
        "--memory",
        "bm25",
        "--llm",
        "anthropic",
        "--model",
        "fake-model",
        "--limit",
        "1",
        "--out",
        str(out),
    ]
    with FakeLLMServer(responder=_responder, api_key=SECRET, fail_first=1) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        assert main(argv) == 0
        first_requests = server.request_count
        first_usage = read_run(out)[2]["tokens"]["client_usage_this_invocation"]
        server.reset_stats()
        # --resume: answers come from the checkpoint, verdicts from the cache
        assert main([*argv, "--resume"]) == 0
        assert server.request_count == 0
    assert first_requests > 0
    captured = capsys.readouterr()
    assert "judge" in captured.out.splitlines()[0]
    count = len(read_run(out)[0])
    assert f"resumed {count} of {count} results from the checkpoint" in captured.out
    results, metrics, manifest = read_run(out)
    assert all(r["prediction"] == "Caroline" and r["judge"] == 0.0 for r in results)
    assert metrics["counts"]["judged"] == len(results)
    assert manifest["llm"]["model"] == "fake-model"
    assert manifest["llm"]["provider"] == "anthropic"
    assert manifest["judge"]["model"] == "fake-model"
    assert manifest["arguments"]["judge"] is True
    assert manifest["tokens"]["answer_input"] > 0
    assert manifest["tokens"]["client_usage_this_invocation"]["calls"] == 0  # all resumed
    assert first_usage["calls"] == first_requests // 2  # each prompt failed once, then succeeded
    assert "locomo" in manifest["prompt_hashes"]["judge"]
    for text in [captured.out, captured.err, *(p.read_text("utf-8") for p in out.iterdir())]:
        assert SECRET not in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dataset", "nope"], "unknown dataset 'nope'"),
        (["--memory", "no_such_module:Nope"], "no_such_module"),
        (["--limit", "0"], "--limit"),
        (["--concurrency", "0"], "--concurrency"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    out = tmp_path / "run"
    assert main(["eval", *argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_api_key_is_reported_before_any_work(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "run"
    assert main(["eval", "--llm", "anthropic", "--out", str(out)]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_dataset_repairs_are_one_summary_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--memory", "null", "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("himga eval: EvidenceWarning: ") == 1
    assert "3 evidence ids name no turn" in err
    assert "`himga datasets --verbose locomo` lists them" in err
    assert "qa_pairs = " not in err  # no source line echoed


@pytest.mark.slow
def test_failed_calls_are_reported_and_retried_by_a_rerun(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    argv = ["eval", "--memory", "null", "--llm", "openai", "--limit", "1", "--out", str(out)]
    with FakeLLMServer(responder=_responder, faults=[400] * 3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-key")
        assert main([*argv, "--no-judge", "--no-progress"]) == 3  # incomplete
        err = capsys.readouterr().err
        assert "incomplete: 3 LLM calls failed after retries" in err
        assert err.count("error: conv-26 ") == 3
        assert json.loads((out / "metrics.json").read_text("utf-8"))["counts"]["errors"] == 3
        server.reset_stats()
        assert main([*argv, "--no-judge", "--no-progress", "--resume"]) == 0
        assert server.request_count == 3  # only the failed ones again
    assert json.loads((out / "metrics.json").read_text("utf-8"))["counts"]["errors"] == 0

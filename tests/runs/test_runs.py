"""``himga.runs``: the run directory as typed objects, and what protects it (issues 22 and 26).

Old run directories (written by himga 0.1.0, ``tests/fixtures/run_0_1_0_*``)
still read in ``compare`` and ``report``; a directory is claimed by one writer
(marker + lock), never one that is not himga's; every file is written
atomically; a results file edited after the run is refused.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga._cli import main
from himga.runs import (
    MANIFEST_FORMAT,
    DatasetInfo,
    Manifest,
    MemoryInfo,
    RunDir,
    RunDirError,
    RunLockedError,
    RunReadError,
    ShardInfo,
)
from himga.runs._files import write_text_atomic
from himga.runs._rundir import LOCK, MARKER

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLD_RUNS = ("run_0_1_0_bm25", "run_0_1_0_fake_llm")
QUICK = ["--memory", "keyword", "--limit", "1", "--no-preflight", "--no-progress"]


@pytest.fixture
def old_runs(tmp_path: Path) -> list[Path]:
    """Copies of the himga 0.1.0 run directories (report writes into its run)."""
    copies = []
    for name in OLD_RUNS:
        shutil.copytree(FIXTURES / name, tmp_path / name)
        copies.append(tmp_path / name)
    return copies


def test_old_run_directories_read_in_compare_and_report(
    old_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    offline, llm = old_runs
    for run in old_runs:
        read = RunDir(run).read()
        assert read.manifest.format == 0
        assert read.manifest.results_sha256 is None
        assert len(read.results) == 6
    argv = ["compare", str(offline), str(llm), "--metric", "R@10", "--resamples", "50"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| overall (all) | 6 |" in out
    assert main(["report", str(llm)]) == 0
    report = (llm / "report.md").read_text("utf-8")
    assert "Judged by anthropic model `***`" in report  # as 0.1.0 recorded it
    assert "6 questions" in report


def test_a_newer_or_broken_manifest_is_refused_saying_why_and_how_to_redo(
    old_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = old_runs[0]
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    del manifest["dataset"]["sha256"]
    (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert "dataset: no field 'sha256'" in err
    assert "redo the run with himga eval" in err
    assert len(err.splitlines()) == 1

    manifest["dataset"]["sha256"] = "0" * 64
    manifest["format"] = MANIFEST_FORMAT + 1
    (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(RunReadError, match="newer than this himga reads"):
        RunDir(run).read()


_JSON = st.dictionaries(st.text(max_size=4), st.none() | st.integers() | st.text(), max_size=3)
_SECONDS = st.floats(0, 1e6)  # a manifest holds no NaN
# Every field not given is drawn from its type.
MANIFESTS = st.builds(
    Manifest,
    arguments=_JSON,
    wall_time_s=_SECONDS,
    dataset=st.builds(DatasetInfo),
    memory=st.builds(MemoryInfo, arguments=_JSON, timeout_s=st.none() | _SECONDS),
    preflight=st.none() | _JSON,
    shard=st.none() | st.builds(ShardInfo),
    llm=st.none() | _JSON,
    prompt_hashes=_JSON,
    judge=st.none() | _JSON,
    tokens=_JSON,
    counts=_JSON,
    results_sha256=st.none() | st.text(),
)


@given(MANIFESTS)
def test_a_manifest_survives_its_json(manifest: Manifest) -> None:
    text = json.dumps(manifest.to_dict())
    assert Manifest.from_dict(json.loads(text)) == manifest


# -- claiming a directory ----------------------------------------------------------


def test_a_directory_that_is_not_himgas_is_never_written_or_deleted(tmp_path: Path) -> None:
    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"title": "my thesis"}', "utf-8")
    (foreign / "report.md").write_text("chapter 1", "utf-8")
    for fresh in (False, True):
        with pytest.raises(RunDirError, match="not a himga run directory"):
            RunDir(foreign).claim(fresh=fresh)
    assert sorted(p.name for p in foreign.iterdir()) == ["manifest.json", "report.md"]


def test_a_run_without_its_checkpoint_is_not_overwritten_without_fresh(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run_0_1_0_bm25", run)
    (run / "checkpoint.jsonl").unlink()  # still himga's: its manifest says so
    with pytest.raises(RunDirError, match="no checkpoint to resume: pass --fresh"):
        RunDir(run).claim()
    with RunDir(run) as run_dir:
        run_dir.claim(fresh=True)
        assert sorted(p.name for p in run.iterdir()) == [MARKER, LOCK]


def test_a_file_or_an_unwritable_path_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x", "utf-8")
    with pytest.raises(RunDirError, match="is a file, not a run directory"):
        RunDir(file).claim()
    with pytest.raises(RunDirError, match="cannot write the run directory"):
        RunDir(file / "run").claim()


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    first = RunDir(tmp_path / "run")
    first.claim()
    try:
        with pytest.raises(RunLockedError, match="being written by another himga process"):
            RunDir(tmp_path / "run").claim(resume=True)
    finally:
        first.release()
    with RunDir(tmp_path / "run") as again:
        again.claim()  # released: free again


def _without_latency(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text("utf-8").splitlines()
    return [
        {k: v for k, v in json.loads(line).items() if k != "retrieval_latency_s"} for line in lines
    ]


def test_two_concurrent_evals_on_one_out_the_second_exits_2_in_one_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with RunDir(out) as running:  # what a first `himga eval --out run` holds while it runs
        running.claim()
        assert main(["eval", *QUICK, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("himga eval: error: ")
        assert "being written by another himga process" in err
        assert len(err.splitlines()) == 1
        assert sorted(p.name for p in out.iterdir()) == [MARKER, LOCK]


def test_bad_out_and_llm_cache_paths_are_one_line_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "file"
    file.write_text("x", "utf-8")
    cases = [
        (["--out", str(file)], "is a file, not a run directory"),
        (["--llm", "openai", "--llm-cache", str(tmp_path)], "is a directory"),
        (["--llm", "openai", "--llm-cache", str(file / "c.sqlite")], "cannot create it"),
    ]
    for argv, expected in cases:
        assert main(["eval", *QUICK, *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err
        assert len(err.splitlines()) == 1


# -- writing -----------------------------------------------------------------------


def test_an_interrupted_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "metrics.json"
    write_text_atomic(target, "old\n")

    def crash(source: Any, destination: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomic(target, "new\n")
    assert target.read_text("utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary left


def test_a_results_file_edited_after_the_run_is_refused_by_compare_and_report(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        assert main(["eval", *QUICK, "--out", str(run)]) == 0
    manifest = RunDir(runs[1]).read().manifest
    assert manifest.format == MANIFEST_FORMAT
    assert manifest.results_sha256 is not None
    capsys.readouterr()
    results = runs[1] / "results.jsonl"
    lines = results.read_text("utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    record["ranked_turn_ids"] = record["evidence_turns"]  # a perfect ranking, by hand
    results.write_text(json.dumps(record) + "\n" + "".join(lines[1:]), "utf-8")
    assert main(["compare", *map(str, runs), "--resamples", "10"]) == 2
    assert "does not match the SHA-256 recorded in manifest.json" in capsys.readouterr().err
    assert main(["report", str(runs[1])]) == 2


def test_a_fresh_run_replaces_only_the_run_files(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["eval", *QUICK, "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine", "utf-8")
    assert main(["eval", *QUICK, "--out", str(out)]) == 2  # a run is there
    assert main(["eval", *QUICK, "--out", str(out), "--fresh"]) == 0
    assert (out / "notes.txt").read_text("utf-8") == "mine"
    assert RunDir(out).read().manifest.arguments["fresh"] is True

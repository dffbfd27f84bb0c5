"""Runs read finished or not (issue 33): ``load_run``, ``himga runs``, ``himga report`` on a
run killed half-way, and the read-only checkpoint reader they share with resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from himga._cli import main
from himga.eval._checkpoint import read_checkpoint
from himga.runs import (
    PartialRun,
    Run,
    RunDir,
    RunReadError,
    find_runs,
    load_run,
    run_status,
    summarize_run,
)
from himga.runs._journal import JUDGE_JOURNAL
from himga.runs._rundir import JUDGE_CACHE, PLAN
from himga.runs._verdicts import VERDICTS
from tests.cli_support import run_cli
from tests.view_support import KILLED_AFTER, QUESTIONS

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest.fixture
def runs(view_runs: Path) -> Path:
    return view_runs


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(runs / name, tmp_path / name))


def test_a_killed_run_reads_partial_from_its_checkpoint_with_its_plan(runs: Path) -> None:
    killed = load_run(runs / "killed")
    assert isinstance(killed, PartialRun)
    assert not (runs / "killed" / "manifest.json").exists()
    assert run_status(killed) == "partial"
    assert len(killed.results) >= KILLED_AFTER
    assert killed.planned == QUESTIONS
    assert killed.label == "bm25"
    assert killed.dataset_name == "locomo"
    assert killed.metrics["counts"]["questions"] == len(killed.results)
    plan = json.loads((runs / "killed" / PLAN).read_text("utf-8"))
    assert killed.started_at == plan["started_at"]
    finished = load_run(runs / "bm25")
    assert isinstance(finished, Run)
    assert run_status(finished) == "complete"
    assert len(finished.judge_errors) == len(finished.results) == QUESTIONS


def test_a_torn_last_line_is_ignored_and_the_file_left_as_it_is(runs: Path, tmp_path: Path) -> None:
    run = _copy(runs, "killed", tmp_path)
    checkpoint = run / "checkpoint.jsonl"
    whole = len(load_run(run).results)
    with checkpoint.open("ab") as file:
        file.write(b'{"sample_id": "conv-2", "quest')  # a writer killed mid-line
    before = checkpoint.read_bytes()
    assert len(load_run(run).results) == whole
    assert checkpoint.read_bytes() == before  # a reader never truncates a live run's file
    recorded = read_checkpoint(checkpoint)
    assert recorded is not None
    assert recorded[0]["memory_spec"] == "bm25"


def test_a_run_whose_questions_failed_is_failed(runs: Path, tmp_path: Path) -> None:
    run = _copy(runs, "bm25", tmp_path)
    metrics = json.loads((run / "metrics.json").read_text("utf-8"))
    metrics["counts"]["errors"] = 1
    (run / "metrics.json").write_text(json.dumps(metrics), "utf-8")
    assert run_status(load_run(run)) == "failed"


def test_unreadable_runs_are_one_line_errors_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunReadError, match=r"empty: no himga eval run in it"):
        find_runs(tmp_path / "empty")
    with pytest.raises(RunReadError, match=r"nowhere: not a directory"):
        find_runs(tmp_path / "nowhere")
    with pytest.raises(RunReadError, match=r"no manifest.json nor checkpoint.jsonl"):
        load_run(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "checkpoint.jsonl").write_text('{"himga_checkpoint": 2, "run": {}}\n[1]\n', "utf-8")
    with pytest.raises(RunReadError, match=r"checkpoint.jsonl:2: expected a JSON object"):
        load_run(bad)


def test_a_checkpoint_without_a_complete_header_is_a_partial_run_with_nothing_done(
    tmp_path: Path,
) -> None:
    (tmp_path / "checkpoint.jsonl").write_text('{"himga_checkp', "utf-8")
    started = load_run(tmp_path)
    assert isinstance(started, PartialRun)
    assert (started.results, started.planned, started.label) == ([], None, "?")


def test_himga_runs_lists_finished_and_killed_runs(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", str(runs)]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    lines = printed.out.splitlines()
    assert lines[0].split() == [
        "run", "benchmark", "memory", "status", "questions", "headline", "started"
    ]  # fmt: skip
    rows = {Path(line.split()[0]).name: line.split() for line in lines[2:]}
    killed = summarize_run(load_run(runs / "killed"))
    assert rows["killed"][1:5] == ["locomo", "bm25", "partial", f"{killed.done}/{QUESTIONS}"]
    for name in ("keyword", "bm25"):
        judge = load_run(runs / name).metrics["overall"]["judge"]
        assert rows[name][3:7] == ["complete", f"{QUESTIONS}/{QUESTIONS}", "judge", f"{judge:.3f}"]
    assert killed.headline is not None
    assert killed.headline[0] == "R@10"  # no verdicts yet


def test_himga_runs_names_what_it_cannot_read_and_lists_the_rest(
    runs: Path, tmp_path: Path
) -> None:
    _copy(runs, "bm25", tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{", "utf-8")
    code, stderr = run_cli(["runs", str(tmp_path)])
    assert code == 2
    assert stderr.startswith(f"himga runs: cannot read {broken}: {broken / 'manifest.json'}: ")
    assert stderr.count("\n") == 1
    assert run_cli(["runs", str(tmp_path / "none")]) == (
        2,
        f"himga runs: error: {tmp_path / 'none'}: not a directory\n",
    )


def test_himga_report_on_a_killed_run_is_marked_partial(runs: Path, tmp_path: Path) -> None:
    run = _copy(runs, "killed", tmp_path)
    code, stderr = run_cli(["report", str(run)])
    assert (code, stderr) == (0, "")
    report = (run / "report.md").read_text("utf-8")
    done = len(load_run(run).results)
    assert report.startswith("# himga run report (partial): `bm25` on `locomo`")
    assert f"**Partial**: {done} of {QUESTIONS} questions finished" in report
    assert f"himga eval --out {run} --resume" in report
    assert f"overall (all)             {done}" in report


def test_a_run_killed_before_its_checkpoint_does_not_block_a_new_one(
    runs: Path, tmp_path: Path
) -> None:
    """``plan.json`` is written as the run starts: left alone, it is no run to refuse."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(runs / "killed" / PLAN, run / PLAN)
    shutil.copy(runs / "killed" / ".himga-run", run / ".himga-run")
    with RunDir(run) as run_dir:
        run_dir.claim()


def test_a_run_killed_while_judging_has_the_verdicts_it_got(runs: Path, tmp_path: Path) -> None:
    finished = load_run(runs / "bm25")
    run = _copy(runs, "bm25", tmp_path)
    for name in ("manifest.json", "metrics.json", "results.jsonl"):
        (run / name).unlink()  # killed after the answers, while judging
    lines = [json.loads(line) for line in (run / VERDICTS).read_text("utf-8").splitlines()]
    started = [line for line in lines if "started" in line]
    asked = [line for line in lines if "request" in line]
    assert len(started) == 1
    assert len(asked) >= 3  # one per distinct judge request
    # the checkpoint keeps questions in the order they finished: match them by id
    score = {
        (r.sample_id, r.question_id): j
        for r, j in zip(finished.results, finished.judge, strict=True)
    }

    def write(text: str) -> None:
        (run / VERDICTS).write_text(text, "utf-8")

    # every verdict recorded, none of the scores judging writes last
    write("".join(json.dumps(line) + "\n" for line in started + asked))
    whole = load_run(run)
    assert isinstance(whole, PartialRun)
    assert whole.judge == [score[r.sample_id, r.question_id] for r in whole.results]
    assert whole.metrics["overall"]["judge"] == finished.metrics["overall"]["judge"]

    def judged_so_far() -> int:
        partial = load_run(run)
        assert isinstance(partial, PartialRun)
        got = [(n, j) for n, j in enumerate(partial.judge) if j == j]
        assert 0 < len(got) < QUESTIONS
        assert all(
            score[partial.results[n].sample_id, partial.results[n].question_id] == j for n, j in got
        )
        assert partial.metrics["counts"]["judged"] == len(got)
        return len(got)

    # half the verdicts, the last line torn by the kill
    half = len(asked) // 2
    write("".join(json.dumps(line) + "\n" for line in started + asked[:half]) + '{"judge": "')
    got = judged_so_far()
    code, stderr = run_cli(["report", str(run)])
    assert (code, stderr) == (0, "")
    assert f"({got} questions judged so far)" in (run / "report.md").read_text("utf-8")
    # a run of an older himga: a cache written as judging started, the verdicts after it
    # in the journal (its last line torn), some never asked
    (run / VERDICTS).unlink()
    pairs = [[line["request"], line["verdict"]] for line in asked]
    (run / JUDGE_CACHE).write_text(json.dumps(dict(pairs[:half])), "utf-8")
    journal = "".join(json.dumps(pair) + "\n" for pair in pairs[half:-1])
    (run / JUDGE_JOURNAL).write_text(journal + '["torn', "utf-8")
    assert judged_so_far() >= got

"""Judges as a vector (issue 32): ``himga judge`` adds a judge to a finished run without
re-answering, into the one verdict record; a rerun asks nothing, a ``kill -9`` loses no
verdict written, changed answers are refused, and a judge prompt registered outside
the package by an entry point is used."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.eval.judge import offline_judge_responder
from himga.llm import ChatRequest, FakeLLMServer
from himga.runs import RunDir, compare_runs, cost_per_correct, costs_per_correct, format_comparison
from himga.runs._judges import format_judges_comparison, judges_comparison
from himga.runs._verdicts import VERDICTS, read_verdicts
from tests.cli_support import QUICK, cwd, offline_cli, run_cli

pytestmark = pytest.mark.usefixtures("loopback_only")

EVAL = ["eval", *QUICK, "--llm", "openai", "--model", "answerer", "--out", "out"]
OFFICIAL = "openai:answerer:official"
STRICT = "openai:second:strict"
JUDGE = ["judge", "out", "--judge-llm", "openai", "--judge-model", "second", "--no-progress"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeLLMServer]:
    """The offline data and a fake LLM answering and judging, the working directory
    ``tmp_path``."""
    with (
        offline_cli(tmp_path) as patch,
        FakeLLMServer(responder=offline_judge_responder) as fake,
        cwd(tmp_path),
    ):
        patch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        yield fake


def _judged_by(server: FakeLLMServer, model: str) -> list[str]:
    return [
        r.messages[-1]["content"]
        for r in server.requests
        if r.body["model"] == model and "answer" in r.messages[-1]["content"].lower()
    ]


def test_himga_judge_adds_a_judge_to_every_output_and_a_rerun_asks_nothing(
    server: FakeLLMServer,
) -> None:
    assert run_cli(EVAL)[0] == 0
    answered = server.request_count
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "strict"])
    assert code == 0, stderr
    asked = _judged_by(server, "second")
    assert asked
    assert all("Grade strictly" in text or "unanswerable" in text for text in asked)
    assert server.request_count == answered + len(asked)  # nothing answered again

    run = RunDir("out").read()
    assert list(run.judges) == [OFFICIAL, STRICT]
    assert run.judges[OFFICIAL] == run.judge
    assert len(run.judges[STRICT]) == len(run.results)
    assert not any(math.isnan(score) for score in run.judges[STRICT])
    (official, strict) = run.manifest.judges
    assert (strict["provider"], strict["model"], strict["prompt"]) == ("openai", "second", "strict")
    assert strict["scores"] == "verdicts"
    assert official["scores"] == "results"
    assert "locomo-strict" in strict["prompt_hashes"]

    code, stderr = run_cli([*JUDGE, "--judge-prompt", "strict"])
    assert code == 0, stderr
    assert len(_judged_by(server, "second")) == len(asked)  # a rerun asks nothing
    assert RunDir("out").read().judges == run.judges


def test_himga_judge_records_its_costs_and_self_test_in_the_manifest(
    server: FakeLLMServer,
) -> None:
    """Item 3 and 7: ``--self-test`` runs the judge's self-test first and keeps the result
    in its manifest entry; the entry counts the judging's calls and tokens, summed over
    invocations (a rerun asks nothing, so adds nothing)."""
    assert run_cli(EVAL)[0] == 0
    before = server.request_count
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "strict", "--self-test"])
    assert code == 0, stderr
    entry = RunDir("out").read().manifest.judges[-1]
    tested = entry["self_test"]
    assert tested["dataset"] == "locomo"
    assert (tested["judge"]["model"], tested["judge"]["prompt"]) == ("second", "strict")
    assert {s["name"] for s in tested["sets"]} >= {"vague", "exact"}
    assert isinstance(tested["passed"], bool)
    judged = len(_judged_by(server, "second"))
    costs = entry["costs"]
    test_calls = server.request_count - before - costs["calls"]
    assert costs["calls"] > 0
    assert test_calls > 0  # the self-test's calls are not counted as the judging's
    assert costs["input_tokens"] > 0
    assert costs["failed_calls"] == 0
    assert judged == costs["calls"] + test_calls

    code, stderr = run_cli([*JUDGE, "--judge-prompt", "strict"])
    assert code == 0, stderr
    again = RunDir("out").read().manifest.judges[-1]
    assert again["self_test"] == tested  # kept by a later invocation without --self-test
    assert {k: again["costs"][k] for k in ("calls", "input_tokens")} == {
        k: costs[k] for k in ("calls", "input_tokens")
    }


def test_a_self_test_of_another_judge_is_refused(server: FakeLLMServer) -> None:
    from himga.llm import get_client
    from himga.runs import judge_run

    assert run_cli(EVAL)[0] == 0
    other = {
        "dataset": "locomo",
        "judge": {"provider": "openai", "model": "x", "prompt": "official"},
    }
    llm = get_client("openai", model="second", base_url=server.openai_base_url)
    with pytest.raises(ValueError, match="self-test given is of judge openai:x:official"):
        judge_run("out", llm, self_test=other, show_progress=False)


def test_himga_judge_refuses_a_run_whose_answers_changed(server: FakeLLMServer) -> None:
    server.inject(500)  # the first answer fails: the resume answers it
    code, _ = run_cli([*EVAL, "--llm-retries", "0"])
    assert code == 3
    code, stderr = run_cli(JUDGE)
    assert code == 3, stderr  # the unanswered question has no verdict
    assert run_cli([*EVAL, "--resume"])[0] == 0
    run = RunDir("out").read()
    assert run.stale_judges == ("openai:second:official",)
    assert list(run.judges) == [OFFICIAL]
    asked = len(_judged_by(server, "second"))
    code, stderr = run_cli(JUDGE)
    assert code == 2
    assert "answers changed since judge openai:second:official judged them" in stderr
    assert len(_judged_by(server, "second")) == asked


def test_an_unknown_judge_prompt_is_refused_naming_the_known_ones(server: FakeLLMServer) -> None:
    assert run_cli(EVAL)[0] == 0
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "lenient"])
    assert code == 2
    assert "no judge prompt 'lenient' for 'locomo'; known: official, strict" in stderr


def test_kill_9_while_a_second_judge_runs_loses_no_verdict_and_the_resume_asks_the_rest(
    server: FakeLLMServer,
) -> None:
    assert run_cli(EVAL)[0] == 0
    release = threading.Event()
    second: list[str] = []

    def stall_after_one(request: ChatRequest) -> str:
        if request.body["model"] == "second":
            second.append(str(request[-1]["content"]))
            if len(second) > 1:
                release.wait(60)
        return offline_judge_responder(request)

    server.responder = stall_after_one
    child = subprocess.Popen(
        [sys.executable, "-m", "himga", *JUDGE, "--concurrency", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    record = Path("out") / VERDICTS
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if read_verdicts(record, pytest.fail).verdicts.get("openai:second:official"):
            break
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    _, stderr = child.communicate()
    assert child.returncode == -signal.SIGKILL, stderr
    kept = read_verdicts(record, pytest.fail).verdicts["openai:second:official"]
    assert len(kept) == 1

    release.set()
    before = len(second)
    code, stderr = run_cli(JUDGE)
    assert code == 0, stderr
    resumed = second[before:]
    final = read_verdicts(record, pytest.fail).verdicts["openai:second:official"]
    assert kept.items() <= final.items()
    assert len(resumed) == len(final) - len(kept)  # only the missing ones were asked
    assert second[0] not in resumed


_PLUGIN = """
from himga.benchmarks._judge_prompts import JudgePrompt
from himga.benchmarks.locomo import LocomoJudge

TEMPLATE = (
    "Plug-in judge. Question: {question} Gold answer: {gold_answer} "
    "Generated answer: {generated_answer} Return the label CORRECT or WRONG as JSON."
)
LENIENT = JudgePrompt("lenient", ("locomo",), LocomoJudge("plugin-lenient", TEMPLATE))
"""


def _install(site: Path, dist: str, module: str) -> None:
    """A distribution ``dist`` with the ``himga.judge_prompts`` entry point ``lenient``
    naming ``module``'s ``LENIENT``, and that module, in ``site``."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[himga.judge_prompts]\nlenient = {module}:LENIENT\n")
    (site / f"{module}.py").write_text(textwrap.dedent(_PLUGIN), encoding="utf-8")


def test_a_judge_prompt_from_an_entry_point_is_used_by_himga_judge(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli(EVAL)[0] == 0
    site = tmp_path / "site"
    _install(site, "lenient-judge", f"{tmp_path.name}_lenient")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("HIMGA_NO_PLUGINS")
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "lenient"])
    assert code == 0, stderr
    asked = _judged_by(server, "second")
    assert any(text.startswith("Plug-in judge.") for text in asked)
    run = RunDir("out").read()
    assert run.manifest.judges[-1]["prompt"] == "lenient"
    assert "plugin-lenient" in run.manifest.judges[-1]["prompt_hashes"]
    assert not any(math.isnan(score) for score in run.judges["openai:second:lenient"])


def test_a_judge_prompt_two_plugins_claim_is_refused_naming_both(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli(EVAL)[0] == 0
    site = tmp_path / "site"
    _install(site, "first-judge", f"{tmp_path.name}_first")
    _install(site, "second-judge", f"{tmp_path.name}_second")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("HIMGA_NO_PLUGINS")
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "lenient"])
    assert code == 2
    assert "judge prompt 'lenient' of 'locomo' is registered twice" in stderr
    assert "'first-judge'" in stderr
    assert "'second-judge'" in stderr
    assert not _judged_by(server, "second")


def test_report_and_compare_show_every_judge_and_their_agreement(server: FakeLLMServer) -> None:
    for out in ("out", "other"):
        eval_argv = [*EVAL[: EVAL.index("--out")], "--out", out]
        if out == "other":
            eval_argv[eval_argv.index("keyword")] = "null"  # answers from no context
        assert run_cli(eval_argv)[0] in (0, 3)
        code, stderr = run_cli([*JUDGE[:1], out, *JUDGE[2:], "--judge-prompt", "strict"])
        assert code in (0, 3), stderr
    assert run_cli(["report", "out"])[0] == 0
    report = Path("out/report.md").read_text("utf-8")
    assert f"| `{OFFICIAL}` | `{STRICT}` | Fleiss' kappa |" in report
    assert "Cohen's kappa of each pair" in report

    runs = [RunDir(out).read() for out in ("out", "other")]
    comparison = compare_runs(runs, resamples=200)
    (row,) = comparison.judges
    assert list(row["accuracy"]) == [OFFICIAL, STRICT]
    assert 0.0 <= row["winner_change_rate"] <= row["rank_flip_rate"] <= 1.0
    # restricted to some judges: those every run has, and none below two
    where = {(r.sample_id, r.question_id): i for i, r in enumerate(runs[1].results)}
    aligned = [[where[(r.sample_id, r.question_id)] for r in runs[0].results]]
    chosen = judges_comparison(
        runs, aligned, resamples=200, seed=0, judges=[STRICT, "openai:nobody:official", OFFICIAL]
    )
    assert [list(r["accuracy"]) for r in chosen] == [[STRICT, OFFICIAL]]
    assert not judges_comparison(runs, aligned, resamples=200, seed=0, judges=[OFFICIAL])
    for cell in row["accuracy"].values():  # each judge's paired difference, as compare's
        low, high = cell["ci95"]
        assert low <= cell["difference"] <= high
        assert 0.0 < cell["p"] <= 1.0
    assert "### Under every judge: B = `other` vs A" in format_comparison(comparison)


@pytest.mark.parametrize(
    ("differences", "holds", "said"),
    [
        ([0.1, 0.2], True, "B beats A under every judge."),
        ([-0.1, -0.2], True, "B trails A under every judge."),
        ([0.1, -0.2], False, "Which run wins depends on the judge."),
        ([0.1, 0.0], False, "B beats A under some judges and ties it"),
        ([0.0, None], False, "B and A tie under every judge that scored both."),
    ],
)
def test_the_comparison_says_what_the_judges_say_of_the_ranking(
    differences: list[float | None], holds: bool, said: str
) -> None:
    row = {
        "run": "b",
        "accuracy": {
            f"judge-{i}": {
                "a": 0.5,
                "b": None if d is None else 0.5 + d,
                "difference": d,
                "ci95": [None, None] if d is None else [d - 0.05, d + 0.05],
                "p": None if d is None else 0.5,
            }
            for i, d in enumerate(differences)
        },
        "holds_under_every_judge": holds,
        "rank_flip_rate": 0.25,
        "winner_change_rate": 0.125,
    }
    text = "\n".join(format_judges_comparison([row], resamples=8))
    assert said in text
    assert "in 0.250 (rank-flip rate" in text
    first = differences[0]
    assert first is not None
    assert f"| {first:+.3f} | [{first - 0.05:+.3f}, " in text
    assert "| 0.5000 |" in text
    assert "on the winner in 0.125" in text


def test_a_correct_answer_is_priced_under_each_judge_with_its_own_calls(
    server: FakeLLMServer,
) -> None:
    assert run_cli(EVAL)[0] == 0
    code, stderr = run_cli([*JUDGE, "--judge-prompt", "strict"])
    assert code == 0, stderr
    run = RunDir("out").read()
    own, strict = costs_per_correct(run)
    assert (own["judge"], strict["judge"]) == (OFFICIAL, STRICT)
    assert own == {**cost_per_correct(run), "judge": OFFICIAL}  # the eval's own judge
    assert run.manifest.costs is not None
    phases = {p.phase: p for p in run.manifest.costs.phases.phases}
    (entry,) = [e for e in run.manifest.judge_entries() if e["id"] == STRICT]
    assert entry["costs"]["calls"] > 0
    # the strict judge's row: every phase but the eval's judging, plus its own calls
    assert strict["calls"] == own["calls"] - phases["judging"].calls + entry["costs"]["calls"]
    assert isinstance(strict["input_tokens"], int)  # a count, printed as one
    assert strict["input_tokens"] == (
        own["input_tokens"] - phases["judging"].input_tokens + entry["costs"]["input_tokens"]
    )
    assert strict["correct"] == sum(
        s for s, r in zip(run.judges[STRICT], run.results, strict=True) if r.prediction
    )
    with pytest.raises(KeyError, match="no judge 'openai:nobody:official'"):
        cost_per_correct(run, "openai:nobody:official")

    assert run_cli(["report", "out"])[0] == 0
    report = Path("out/report.md").read_text("utf-8")
    assert f"| `out` | `{STRICT}` | {strict['correct']:,.0f} / {strict['judged']} |" in report

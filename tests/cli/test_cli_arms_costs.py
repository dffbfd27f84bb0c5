"""Judge intervals, named arms, cost per correct answer and published claims, through
``himga report`` and ``himga compare`` on judged runs of the small LoCoMo file."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from himga.eval import judge_interval
from himga.eval._intervals import wilson_interval
from himga.eval.judge import offline_judge_responder
from himga.llm import FakeLLMServer
from himga.runs import Manifest, RunDir, arm_of, cost_per_correct, load_published
from himga.view import ViewData
from tests.cli.test_cli_trust import himga
from tests.cli_support import cwd, offline_cli, run_cli

_LLM = ["--no-preflight", "--no-progress", "--llm", "anthropic", "--model", "fake"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Judged runs of ``null`` (LLM only), ``full`` (full context) and ``bm25``, and
    ``oracle``: the full run's copy whose manifest says ``"arm": "oracle"``, as
    ``himga eval --arm oracle`` writes it (its context, the whole of a three-turn
    conversation, holds every gold evidence turn)."""
    root = tmp_path_factory.mktemp("arms")
    made: dict[str, Path] = {}
    with (
        offline_cli(root) as patch,
        FakeLLMServer(responder=offline_judge_responder) as server,
        cwd(root),
    ):
        patch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        for memory in ("null", "full", "bm25"):
            code, stderr = run_cli(["eval", "--memory", memory, *_LLM, "--out", f"runs/{memory}"])
            assert code == 0, stderr
            made[memory] = root / "runs" / memory
    oracle = root / "runs" / "oracle"
    shutil.copytree(made["full"], oracle)
    manifest = json.loads((oracle / "manifest.json").read_text("utf-8"))
    (oracle / "manifest.json").write_text(json.dumps({**manifest, "arm": "oracle"}), "utf-8")
    made["oracle"] = oracle
    return made


def _stdout(argv: list[str]) -> str:
    # 1,000 resamples: the paired tests are not what these tests check; a loaded machine
    # then still answers well inside the deadline.
    done = himga(*argv, "--resamples", "1000", timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _accuracy(run: Path) -> float:
    metrics = json.loads((run / "metrics.json").read_text("utf-8"))
    value: float = metrics["overall"]["judge"]
    return value


def _interval(run: Path) -> tuple[float, float]:
    found = judge_interval(json.loads((run / "metrics.json").read_text("utf-8"))["overall"])
    assert found is not None
    return found


def test_the_arms_are_named_from_the_manifest(runs: dict[str, Path]) -> None:
    arms = {name: arm_of(RunDir(path).read().manifest) for name, path in runs.items()}
    assert arms == {"null": "llm-only", "full": "full", "bm25": "memory", "oracle": "oracle"}
    # a manifest without the key (every run before arms were recorded) is the memory arm
    recorded = json.loads((runs["bm25"] / "manifest.json").read_text("utf-8"))
    assert recorded.pop("arm") == "memory"
    assert arm_of(Manifest.from_dict(recorded)) == "memory"


def test_metrics_json_and_the_table_carry_the_judge_interval(runs: dict[str, Path]) -> None:
    metrics = json.loads((runs["bm25"] / "metrics.json").read_text("utf-8"))
    overall = metrics["overall"]
    correct = round(overall["judge"] * overall["judged"])
    expected = wilson_interval(correct, overall["judged"])
    assert judge_interval(overall) == (expected.low, expected.high)
    report = runs["bm25"] / "report.md"
    assert run_cli(["report", str(runs["bm25"]), "--out", str(report)])[0] == 0
    text = report.read_text("utf-8")
    header = next(line for line in text.splitlines() if line.startswith("category"))
    assert "judge  judge-95%" in re.sub(" +", "  ", header)
    row = next(line for line in text.splitlines() if line.startswith("overall (no adversarial)"))
    assert f"[{expected.low:.3f}, {expected.high:.3f}]" in row
    assert "Wilson 95% interval of the judge accuracy" in text


def test_report_splits_memory_from_reader_and_prices_a_correct_answer(
    runs: dict[str, Path],
) -> None:
    out = runs["bm25"] / "arms.md"
    argv = ["report", str(runs["bm25"]), "--out", str(out), "--published"]
    argv += ["--reference", str(runs["null"]), "--reference", str(runs["oracle"])]
    code, stderr = run_cli(argv)
    assert code == 0, stderr
    text = out.read_text("utf-8")
    floor, ceiling, memory = (_accuracy(runs[name]) for name in ("null", "oracle", "bm25"))
    assert "## Memory and reader" in text
    assert f"| null | LLM only | {floor:.3f} |" in text
    assert f"| full | oracle (gold evidence) | {ceiling:.3f} |" in text
    share = f"{(memory - floor) / (ceiling - floor):.0%}" if ceiling > floor else "-"
    assert f"| bm25 | memory | {memory:.3f} | {memory - floor:+.3f} " in text
    assert f"| {share} |" in text
    # cost per correct answer, from the manifest's costs and the verdicts
    entry = cost_per_correct(RunDir(runs["bm25"]).read())
    assert entry["correct"] > 0
    tokens = entry["input_tokens"] + entry["output_tokens"]
    assert entry["per_correct"]["input_tokens"] * entry["correct"] == pytest.approx(
        entry["input_tokens"]
    )
    assert "### Cost per correct answer" in text
    assert f"{tokens:,}" in text
    assert f"{tokens / entry['correct']:,.0f}" in text
    assert "No dollar figure" in text
    # published claims, marked as such, apart from the run's numbers
    assert "### Published, not re-run: claims on locomo" in text
    assert "| Mem0 | LLM-as-a-Judge accuracy (J) | 66.9 |" in text


def test_report_says_which_arm_is_missing(runs: dict[str, Path]) -> None:
    out = runs["bm25"] / "floor-only.md"
    argv = ["report", str(runs["bm25"]), "--out", str(out), "--reference", str(runs["null"])]
    assert run_cli(argv)[0] == 0
    assert "add an oracle run (`--arm oracle`) of the same questions" in out.read_text("utf-8")
    report = runs["oracle"] / "own.md"
    assert run_cli(["report", str(runs["oracle"]), "--out", str(report)])[0] == 0
    assert "This run is the **oracle (gold evidence)** arm" in report.read_text("utf-8")


def test_report_refuses_a_reference_of_other_questions(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    with offline_cli(tmp_path) as patch, FakeLLMServer(responder=offline_judge_responder) as llm:
        patch.setenv("ANTHROPIC_BASE_URL", llm.anthropic_base_url)
        code, stderr = run_cli(
            ["eval", "--memory", "null", *_LLM, "--limit", "1", "--out", str(other)]
        )
        assert code == 0, stderr
    argv = ["report", str(runs["bm25"]), "--out", str(tmp_path / "r.md"), "--reference", str(other)]
    code, stderr = run_cli(argv)
    assert code == 2
    assert "different question sets" in stderr


def test_compare_names_the_arms_and_splits_the_score(runs: dict[str, Path]) -> None:
    order = ("bm25", "null", "full", "oracle")
    argv = ["compare", *(str(runs[name]) for name in order), "--metric", "judge"]
    comparison = json.loads(_stdout([*argv, "--json"]))
    split = comparison["arms"]
    floor, ceiling = _accuracy(runs["null"]), _accuracy(runs["oracle"])
    assert (split["floor"], split["ceiling"]) == (pytest.approx(floor), pytest.approx(ceiling))
    bm25 = next(run for run in split["runs"] if run["label"] == "bm25")
    assert bm25["over_floor"] == pytest.approx(_accuracy(runs["bm25"]) - floor)
    rows = {row["path"]: row for row in comparison["leaderboard"]["rows"]}
    assert rows[str(runs["null"])]["arm"] == "llm-only"
    assert rows[str(runs["oracle"])]["arm"] == "oracle"
    costs = {entry["path"]: entry for entry in comparison["cost_per_correct"]}
    assert set(costs) == {str(runs[name]) for name in order}

    markdown = _stdout(argv)
    assert "| LLM only: null |" in markdown
    assert "| full context: full |" in markdown
    assert "| oracle (gold evidence): full |" in markdown
    interval = _interval(runs["bm25"])
    assert f"[{interval[0]:.3f}, {interval[1]:.3f}]" in markdown
    assert "### Memory and reader" in markdown
    assert "### Cost per correct answer" in markdown
    assert "Published, not re-run" not in markdown


def test_compare_shows_published_claims_apart(runs: dict[str, Path]) -> None:
    argv = ["compare", str(runs["null"]), str(runs["bm25"]), "--published"]
    markdown = _stdout(argv)
    claims = [c for c in load_published() if c.benchmark == "locomo"]
    assert markdown.index("### Published, not re-run") > markdown.index("### Leaderboard")
    for claim in claims:
        assert f"| {claim.system} | {claim.metric} | {claim.score_percent:g} |" in markdown
    comparison = json.loads(_stdout([*argv, "--json"]))
    assert [c["system"] for c in comparison["published"]] == [c.system for c in claims]
    # never merged into the run's own numbers
    assert all("published" not in row for row in comparison["leaderboard"]["rows"])


def test_the_viewer_leaderboard_has_the_arm_and_the_interval(runs: dict[str, Path]) -> None:
    data = ViewData([RunDir(runs[name]).read() for name in ("bm25", "null")])
    entries = data.leaderboard()["runs"]
    assert [entry["arm"] for entry in entries] == ["memory", "LLM only"]
    assert entries[0]["intervals"]["overall"]["judge"] == list(_interval(runs["bm25"]))

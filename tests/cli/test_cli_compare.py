"""``himga compare`` and ``himga report`` through the real CLI, on real LoCoMo runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from himga.eval import compute_measurements
from himga.runs import RunDir
from tests.cli.test_cli_trust import himga
from tests.cli_support import run_cli


@pytest.fixture(scope="module")
def runs(shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Offline runs of bm25 and keyword on LoCoMo's first two conversations (304
    questions), and a one-conversation keyword run; only bm25's report states its
    pre-flight, so only bm25 runs one."""
    root = tmp_path_factory.mktemp("runs")
    env = {"HIMGA_DATA_DIR": str(shared_datasets)}
    made = {}
    plans = (
        ("bm25", ["--limit", "2"]),
        ("keyword", ["--limit", "2", "--no-preflight"]),
        ("keyword-1", ["--limit", "1", "--no-preflight"]),
    )
    for name, extra in plans:
        out = root / name
        memory = name.split("-")[0]
        argv = ["eval", "--memory", memory, "--out", str(out), "--no-progress", *extra]
        run = himga(*argv, env=env)
        assert run.returncode == 0, run.stderr
        made[name] = out
    return made


def _metrics(run: Path) -> dict[str, Any]:
    metrics: dict[str, Any] = json.loads((run / "metrics.json").read_text("utf-8"))
    return metrics


@pytest.mark.slow
def test_compare_prints_paired_intervals_and_json_matches_the_runs(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    figure = tmp_path / "compare.png"
    argv = ["compare", str(runs["keyword"]), str(runs["bm25"]), "--json", "--plot", str(figure)]
    run = himga(*argv)
    assert run.returncode == 0, run.stderr
    comparison = json.loads(run.stdout)
    assert comparison["resamples"] == 10_000
    assert comparison["seed"] == 0
    assert comparison["questions"] == 304
    assert {"context_recall_any", "recall@10"} <= set(comparison["metrics"])
    rows = {(r["group"], r["metric"]): r for r in comparison["comparisons"]}
    keyword, bm25 = _metrics(runs["keyword"]), _metrics(runs["bm25"])
    for group, block in (("overall (all)", "overall_with_adversarial"), ("temporal", None)):
        for metric in ("context_recall_any", "recall@10"):
            row = rows[(group, metric)]
            a = keyword[block] if block else keyword["by_category"][group]
            b = bm25[block] if block else bm25["by_category"][group]
            assert row["a"] == pytest.approx(a[metric])  # every question scored in both
            assert row["b"] == pytest.approx(b[metric])
            assert row["difference"] == pytest.approx(b[metric] - a[metric])
            low, high = row["ci"]
            assert low <= row["difference"] <= high
            assert 0 < row["p_value"] <= 1
    assert rows[("overall (all)", "recall@10")]["n"] == bm25["overall_with_adversarial"]["ranked"]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    markdown = himga("compare", str(runs["keyword"]), str(runs["bm25"]), "--metric", "R@10")
    assert markdown.returncode == 0, markdown.stderr
    assert "10,000 resamples, seed 0" in markdown.stdout
    assert "| category | n | A | B | Δ | 95% CI | p |" in markdown.stdout
    assert "| overall (all) | " in markdown.stdout


@pytest.mark.slow
def test_compare_prints_one_leaderboard_of_every_run_from_their_metrics(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    twin = tmp_path / "keyword-twin"  # as good as keyword: ranked after it, as given
    shutil.copytree(runs["keyword"], twin)
    argv = ["compare", str(runs["keyword"]), str(runs["bm25"]), str(twin), "--metric", "R@10"]
    run = himga(*argv, "--json")
    assert run.returncode == 0, run.stderr
    board = json.loads(run.stdout)["leaderboard"]
    assert board["metric"] == "recall@10"
    assert board["groups"][-2:] == ["overall (no adversarial)", "overall (all)"]
    bm25 = _metrics(runs["bm25"])
    first = board["rows"][0]  # bm25 ranks first: the keyword runs' R@10 is lower
    assert first["path"] == str(runs["bm25"])
    assert first["label"] == "bm25"
    assert first["questions"] == 304
    assert first["by_group"]["temporal"] == bm25["by_category"]["temporal"]["recall@10"]
    assert first["by_group"]["overall (all)"] == bm25["overall_with_adversarial"]["recall@10"]
    everything = {
        **bm25["overall_with_adversarial"],
        **compute_measurements(RunDir(runs["bm25"]).read().results)["overall_with_adversarial"],
    }
    assert set(first["run_level"]) == {"retrieval_ms_p50", "retrieval_ms_p95", "context_chars"}
    for name, value in first["run_level"].items():
        assert value == everything[name] > 0
    assert [row["path"] for row in board["rows"][1:]] == [str(runs["keyword"]), str(twin)]

    markdown = himga(*argv)
    assert markdown.returncode == 0, markdown.stderr
    lines = markdown.stdout.splitlines()
    start = lines.index(
        "### Leaderboard: R@10 per category, best first by overall (no adversarial); "
        "latency and context size over every question"
    )
    header, _, *rows = lines[start + 2 : start + 7]
    assert header.startswith("| run | memory | n | errors | mem-err | multi-hop |")
    assert header.endswith("| overall (all) | ret-p50-ms | ret-p95-ms | ctx-chars |")
    cells = [row.strip("|").split(" | ") for row in rows]
    assert cells[0][:5] == [f" `{runs['bm25']}`", "bm25", "304", "0", "0"]
    assert cells[0][-4] == f"{everything['recall@10']:.3f}"
    assert cells[0][-3:] == [
        f"{everything['retrieval_ms_p50']:.1f}",
        f"{everything['retrieval_ms_p95']:.1f}",
        f"{everything['context_chars']:.0f} ",
    ]
    assert cells[1][0] == f" `{runs['keyword']}`"
    assert cells[1][1:] == cells[2][1:]  # the twin: the same results, the same row
    assert lines.index("### R@10: B = `" + str(runs["bm25"]) + "` (bm25) vs A") > start


def test_compare_refuses_other_question_sets_and_other_datasets(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # Refusals in process: the two tests above run the command end to end.
    code, stderr = run_cli(["compare", str(runs["keyword-1"]), str(runs["bm25"])])
    assert code == 2
    assert "hold different question sets" in stderr
    other = tmp_path / "other"
    shutil.copytree(runs["keyword"], other)
    manifest = json.loads((other / "manifest.json").read_text("utf-8"))
    manifest["dataset"]["sha256"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    code, stderr = run_cli(["compare", str(other), str(runs["bm25"])])
    assert code == 2
    assert "ran on different datasets (sha256" in stderr
    for resamples in ("0", "1000001"):
        argv = ["compare", str(runs["keyword"]), str(runs["bm25"]), "--resamples", resamples]
        assert run_cli(argv) == (
            2,
            "himga compare: error: --resamples must be between 1 and 1,000,000\n",
        )
    code, stderr = run_cli(["compare", str(tmp_path / "nowhere"), str(runs["bm25"])])
    assert code == 2
    assert "manifest.json: missing" in stderr


@pytest.mark.slow
def test_report_writes_table_manifest_prose_and_plot(runs: dict[str, Path]) -> None:
    run = himga("report", str(runs["bm25"]))
    assert run.returncode == 0, run.stderr
    report = (runs["bm25"] / "report.md").read_text("utf-8")
    assert report.startswith("# himga run report: `bm25` on `locomo`")
    assert "overall (all)             304" in report  # the run's table
    header = next(line for line in report.splitlines() if line.startswith("category"))
    assert header.split()[-3:] == ["ret-p50-ms", "ret-p95-ms", "ctx-chars"]
    manifest = json.loads((runs["bm25"] / "manifest.json").read_text("utf-8"))
    assert manifest["dataset"]["sha256"] in report
    assert "No LLM: the run measured retrieval only" in report
    assert "Answer tokens: 0 in, 0 out" in report
    assert "Pre-flight passed protocol-shape, retrieve-returns-str" in report
    assert "![per-category metrics](report.png)" in report
    assert (runs["bm25"] / "report.png").read_bytes()[:4] == b"\x89PNG"

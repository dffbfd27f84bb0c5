"""Gold errors (issue 32, item 4): errata files, and report / compare showing raw accuracy,
accuracy without the audited-wrong questions, and the ceiling side by side."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks import _errata
from himga.benchmarks._errata import ErrataError, PublishedErrata, fetch_errata, read_errata
from himga.runs import RunDir
from himga.runs._gold_errors import gold_error_accuracy, gold_error_panel
from tests.cli_support import run_cli
from tests.loopback_server import LoopbackServer


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), "utf-8")
    return path


def test_the_generic_format_is_read_with_its_hash(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "e.json",
        {
            "dataset": "locomo",
            "errata": [
                {"question_id": "conv-26:q2", "corrected_answer": "2022", "reason": "typo"},
                {"question_id": "conv-26:q5"},
            ],
        },
    )
    errata = read_errata(path)
    assert errata.dataset == "locomo"
    assert set(errata.entries) == {"conv-26:q2", "conv-26:q5"}
    assert errata.entries["conv-26:q2"].corrected_answer == "2022"
    assert errata.entries["conv-26:q5"].reason is None
    assert len(errata.sha256) == 64


def test_the_locomo_audit_format_keeps_only_gold_answer_errors(tmp_path: Path) -> None:
    # Synthetic entries of the audit's shape (not its data).
    entry = {"question": "?", "golden_answer": "x", "category": 1, "reasoning": "r"}
    path = _write(
        tmp_path / "errors.json",
        [
            {**entry, "question_id": "locomo_0_qa1", "error_type": "HALLUCINATION",
             "correct_answer": "y"},
            {**entry, "question_id": "locomo_9_qa0", "error_type": "WRONG_CITATION",
             "correct_answer": "x"},
        ],
    )  # fmt: skip
    errata = read_errata(path)
    assert errata.dataset == "locomo"
    assert list(errata.entries) == ["conv-26:q2"]
    assert errata.entries["conv-26:q2"].corrected_answer == "y"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "not JSON"),
        ('{"errata": [{"reason": "x"}]}', "entry 0: needs a string 'question_id'"),
        ('{"errata": [{"question_id": "a"}, {"question_id": "a"}]}', "named twice"),
        ('{"wrong": []}', "expected"),
        ('[{"question_id": "q1", "error_type": "AMBIGUOUS"}]', "entry 0: question_id 'q1'"),
    ],
)
def test_bad_errata_are_refused_in_one_line(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, "utf-8")
    with pytest.raises(ErrataError) as raised:
        read_errata(path)
    assert says in str(raised.value)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_published_errata_not_fetched_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path))
    with pytest.raises(ErrataError, match="himga errata fetch locomo-audit"):
        read_errata("locomo-audit")


def _headline(run_path: Path) -> list[tuple[str, float]]:
    """(question id, judge score) of each judged non-adversarial question, from the file."""
    lines = (run_path / "results.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [
        (r["question_id"], r["judge"])
        for r in records
        if r["category"] != "adversarial"
        and isinstance(r.get("judge"), (int, float))
        and not math.isnan(r["judge"])
    ]


@given(st.data())
def test_the_three_accuracies_follow_their_definitions(
    view_runs: Path, data: st.DataObject
) -> None:
    run = RunDir(view_runs / "bm25").read()
    scored = _headline(run.path)
    wrong = data.draw(st.sets(st.sampled_from([q for q, _ in scored])))
    errata_file = {"errata": [{"question_id": q} for q in sorted(wrong)] + [{"question_id": "x"}]}
    errata = read_errata(_write(run.path.parent.parent / f"e{len(wrong)}.json", errata_file))
    got = gold_error_accuracy(run, errata)
    kept = [s for q, s in scored if q not in wrong]
    assert got.judged == len(scored)
    assert got.audited_wrong == len(wrong)
    assert got.raw == pytest.approx(sum(s for _, s in scored) / len(scored))
    assert got.ceiling == pytest.approx(1 - len(wrong) / len(scored))
    assert got.excluding == (pytest.approx(sum(kept) / len(kept)) if kept else None)


def test_a_run_with_several_judges_gets_a_row_per_judge(view_runs: Path, tmp_path: Path) -> None:
    """``himga judge`` adds judges to a run: the gold-error rows follow each one's verdicts."""
    run = RunDir(view_runs / "bm25").read()
    scored = _headline(run.path)
    errata = read_errata(_write(tmp_path / "e.json", {"errata": [{"question_id": scored[0][0]}]}))
    rejecting = [0.0] * len(run.results)
    judged = dataclasses.replace(
        run, judges={"own:judge:official": run.judge, "b:m:strict": rejecting}
    )
    rows = gold_error_panel(judged, errata)
    assert [row.label for row in rows] == [
        f"{run.label} · own:judge:official",
        f"{run.label} · b:m:strict",
    ]
    assert rows[0].raw == gold_error_accuracy(run, errata).raw
    assert rows[1].raw == 0.0
    assert rows[1].excluding == (0.0 if len(scored) > 1 else None)
    assert rows[0].ceiling == rows[1].ceiling == pytest.approx(1 - 1 / len(scored))
    with pytest.raises(ErrataError, match="no verdicts of judge 'x'"):
        gold_error_accuracy(judged, errata, judge="x")
    assert gold_error_panel(run, errata) == [gold_error_accuracy(run, errata)]


def test_report_and_compare_show_them_side_by_side(view_runs: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(view_runs, runs)
    scored = _headline(runs / "bm25")
    errata = _write(
        tmp_path / "e.json",
        {"dataset": "locomo", "errata": [{"question_id": scored[0][0]}]},
    )
    code, stderr = run_cli(["report", str(runs / "bm25"), "--errata", str(errata)])
    assert code == 0, stderr
    report = (runs / "bm25" / "report.md").read_text("utf-8")
    assert "## Gold errors" in report
    assert "| excluding gold errors | ceiling |" in report
    ceiling = f"{(len(scored) - 1) / len(scored):.1%}"
    assert f"| {ceiling} |" in report
    code, stderr = run_cli(
        ["compare", str(runs / "keyword"), str(runs / "bm25"), "--errata", str(errata), "--json"]
    )
    assert code == 0, stderr


def test_errata_of_another_benchmark_are_refused(view_runs: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(view_runs, runs)
    errata = _write(tmp_path / "e.json", {"dataset": "longmemeval_s", "errata": []})
    code, stderr = run_cli(["report", str(runs / "bm25"), "--errata", str(errata)])
    assert code == 2
    assert "audit 'longmemeval_s'" in stderr
    assert not (runs / "bm25" / "report.png").exists()
    assert not (runs / "bm25" / "report.md").exists()


@pytest.mark.usefixtures("loopback_only")
def test_fetch_verifies_the_pinned_hash_and_downloads_once(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    body = json.dumps([{"question_id": "locomo_1_qa3", "error_type": "AMBIGUOUS"}]).encode()
    url = server.url("/errors.json", body)
    pinned = PublishedErrata(url, hashlib.sha256(body).hexdigest(), "CC BY-NC 4.0", "locomo")
    monkeypatch.setitem(_errata.PUBLISHED_ERRATA, "locomo-audit", pinned)
    code, stderr = run_cli(["errata", "fetch", "locomo-audit", "--no-progress"])
    assert code == 0, stderr
    assert list(read_errata("locomo-audit").entries) == ["conv-30:q4"]
    assert fetch_errata("locomo-audit", show_progress=False).read_bytes() == body
    assert server.requests == ["/errors.json"]


@pytest.mark.usefixtures("loopback_only")
def test_a_download_of_other_content_is_refused_and_not_kept(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    url = server.url("/errors.json", b"[]")
    pinned = PublishedErrata(url, "0" * 64, "CC BY-NC 4.0", "locomo")
    monkeypatch.setitem(_errata.PUBLISHED_ERRATA, "locomo-audit", pinned)
    code, stderr = run_cli(["errata", "fetch", "locomo-audit", "--no-progress"])
    assert code == 2
    assert "sha256" in stderr
    assert not (tmp_path / "cache").exists()

"""``himga view`` in a real browser (issue 33): headless Chromium clicks from the leaderboard
to a question to a diff, served and as one file, and reaches nothing but loopback.

The runs are ``tests/view_support.py``'s: ``keyword`` and ``bm25`` judged by the fake
LLM, ``killed`` stopped half-way. With ``HIMGA_VIEW_SCREENSHOTS=DIR`` the served test
saves a screenshot of each page there (``docs/view_*.png`` are made so).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from himga.runs import load_run
from himga.view import ViewData, ViewServer
from tests.browser import guarded_context
from tests.cli_support import run_cli
from tests.view_support import QUESTIONS

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.usefixtures("loopback_only")

# In the order `himga view RUNS` lists a directory: by name.
NAMES = ("bm25", "keyword", "killed")


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text("utf-8").splitlines()]


def _shown(page: Page, hash_: str, timeout_s: float = 15) -> None:
    """Wait until the page has rendered route ``hash_``."""
    page.wait_for_selector(f'main[data-ready="{hash_}"]', timeout=timeout_s * 1000)


def _shot(page: Page, name: str) -> None:
    folder = os.environ.get("HIMGA_VIEW_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"view_{name}.png"))


def _cells(page: Page, selector: str) -> list[list[str]]:
    rows: list[list[str]] = page.eval_on_selector_all(
        f"{selector} tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))",
    )
    return rows


def _clicked(page: Page, selector: str, hash_: str) -> None:
    page.click(selector)
    _shown(page, hash_)


@pytest.fixture
def served(view_runs: Path) -> Any:
    runs = [load_run(view_runs / name) for name in NAMES]
    with ViewServer(ViewData(runs)).start() as server:
        yield server


def test_leaderboard_to_a_question_to_a_diff(
    served: ViewServer, offline_page: Page, view_runs: Path
) -> None:
    page = offline_page
    page.goto(served.url)
    _shown(page, "#/")
    _shot(page, "leaderboard")
    board = _cells(page, "#leaderboard")
    headers = page.eval_on_selector_all("#leaderboard th", "hs => hs.map(h => h.textContent)")
    judge = headers.index("judge")
    rows = {Path(row[0]).name: row for row in board}
    killed = load_run(view_runs / "killed")
    assert rows["killed"][1:5] == ["locomo", "bm25", "partial", f"{len(killed.results)}/6"]
    for name in ("bm25", "keyword"):
        metrics = json.loads((view_runs / name / "metrics.json").read_text("utf-8"))
        assert rows[name][3:5] == ["complete", f"{QUESTIONS}/{QUESTIONS}"]
        overall = metrics["overall"]
        # the judge's accuracy with its Wilson 95% interval, as metrics.json records them
        assert rows[name][judge] == (
            f"{overall['judge']:.3f} [{overall['judge_ci95_low']:.3f}, "
            f"{overall['judge_ci95_high']:.3f}]"
        )
        assert rows[name][headers.index("judge model")] == "fake"
    assert page.locator("#recall-curves polyline").count() == 3

    # the bm25 run's questions, then only the wrong ones
    _clicked(page, "#leaderboard tr[data-run='0'] a", "#/run/0")
    records = _records(view_runs / "bm25")
    listed = _cells(page, "#questions")
    assert [row[2] for row in listed] == [r["question_id"] for r in records]
    wrong = [r["question_id"] for r in records if r["judge"] < 0.5]
    page.select_option("#filter-outcome", "wrong")
    _shown(page, "#/run/0?outcome=wrong&page=0")
    _shot(page, "questions")
    assert [row[2] for row in _cells(page, "#questions")] == wrong
    assert {row[5] for row in _cells(page, "#questions")} <= {"wrong"}

    # where the two judged runs' verdicts differ
    page.select_option("#filter-outcome", "")
    _shown(page, "#/run/0?page=0")
    page.check("#filter-disagree")
    _shown(page, "#/run/0?disagree=1&page=0")
    other = {r["question_id"]: r["judge"] >= 0.5 for r in _records(view_runs / "keyword")}
    split = [r["question_id"] for r in records if (r["judge"] >= 0.5) != other[r["question_id"]]]
    assert split  # the two memories retrieve differently: some verdicts differ
    assert [row[2] for row in _cells(page, "#questions")] == split

    # one question: its texts, the evidence marked in the context, its verdict
    n = next(i for i, r in enumerate(records) if r["question_id"] == split[0])
    _clicked(page, "#questions tbody tr:first-child td:nth-child(5) a", f"#/run/0/q/{n}")
    _shot(page, "question")
    record = records[n]
    assert page.text_content("#question-text") == record["question"]
    assert page.text_content("#gold") == record["answer"]
    assert page.text_content("#prediction") == record["prediction"]
    assert page.text_content("#outcome") == ("correct" if record["judge"] >= 0.5 else "wrong")
    marks = page.eval_on_selector_all("#context mark", "ms => ms.map(m => m.textContent)")
    assert marks == [t for t in record["evidence_texts"] if t in record["context"]]
    assert page.text_content("#context") == record["context"]

    # from the question to the diff with the keyword run
    _clicked(page, "#others li:first-child a:last-child", "#/diff/0/1")
    _clicked(page, "a[href='#/']", "#/")
    page.select_option("#diff-a", "1")
    page.select_option("#diff-b", "0")
    _clicked(page, "#diff-go", "#/diff/1/0")
    _shot(page, "diff")
    verdicts = {r["question_id"]: r["judge"] >= 0.5 for r in records}
    gained = sum(verdicts[q] and not other[q] for q in verdicts)
    lost = sum(other[q] and not verdicts[q] for q in verdicts)
    assert str(page.text_content("#diff-summary")).startswith(
        f"B gained {gained} and lost {lost} questions against A"
    )
    changes = [row[5] for row in _cells(page, "#diff")]
    assert sorted(changes) == sorted(["gained"] * gained + ["lost"] * lost)
    _clicked(
        page, "th[data-sort='category']", "#/diff/1/0?show=changed&sort=category&dir=desc&page=0"
    )
    categories = [row[1] for row in _cells(page, "#diff")]
    assert categories == sorted(categories, reverse=True)


def test_the_single_file_shows_the_same_pages_from_disk(
    view_runs: Path, tmp_path: Path, offline_page: Page
) -> None:
    out = tmp_path / "view.html"
    assert run_cli(["view", "--html", str(out), str(view_runs)]) == (0, "")
    page = offline_page
    page.goto(out.as_uri())
    _shown(page, "#/")
    assert [Path(row[0]).name for row in _cells(page, "#leaderboard")] == list(NAMES)
    _clicked(page, "#leaderboard tr[data-run='2'] a", "#/run/2")  # the killed run
    killed = load_run(view_runs / "killed")
    assert [row[2] for row in _cells(page, "#questions")] == [r.question_id for r in killed.results]
    _clicked(page, "#questions tbody tr:first-child td:nth-child(5) a", "#/run/2/q/0")
    assert page.text_content("#question-text") == killed.results[0].question


def test_himga_view_serves_until_ctrl_c(view_runs: Path, offline_page: Page) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "himga", "view", str(view_runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("himga view: 3 runs at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        offline_page.goto(url)
        # The address comes before the runs are read (the killed run's metrics, and the
        # imports they need): the page waits for them, slowly on a loaded machine.
        _shown(offline_page, "#/", timeout_s=120)
        assert len(_cells(offline_page, "#leaderboard")) == 3
        # The leaderboard came before the runs' results were read: their measurements
        # are filled in as each is read (and no request is cut short by the Ctrl-C).
        offline_page.wait_for_function(
            "[...document.querySelectorAll('[data-measure]')].every(c => c.textContent !== '…')",
            timeout=120_000,
        )
        headers = offline_page.eval_on_selector_all(
            "#leaderboard th", "hs => hs.map(h => h.textContent)"
        )
        shown = {Path(row[0]).name: row for row in _cells(offline_page, "#leaderboard")}
        bm25 = _records(view_runs / "bm25")
        chars = sum(len(r["context"]) for r in bm25) / len(bm25)
        assert shown["bm25"][headers.index("ctx chars")] == f"{chars:.0f}"
    finally:
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)
    assert (child.returncode, stderr) == (0, "himga view: stopped\n")


def test_the_guard_refuses_and_records_a_request_beyond_loopback(browser: Browser) -> None:
    """What makes ``offline_page`` fail a test: the request is refused, never sent."""
    context, refused, _ = guarded_context(browser)
    page = context.new_page()
    page.set_content('<img src="http://203.0.113.7/pixel.png">')  # TEST-NET-3: nobody's
    page.wait_for_load_state("load")
    context.close()
    assert refused == ["http://203.0.113.7/pixel.png"]

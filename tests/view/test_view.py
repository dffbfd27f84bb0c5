"""``himga view``'s documents, server and single file, without a browser (issue 33).

The browser tests (``test_view_browser.py``) show the same documents on the page; here
each is checked against the run directories it comes from.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.eval import MemoryCallError
from himga.runs import PartialRun, Run, RunHead, RunReadError, load_head, load_run
from himga.view import (
    OUTCOMES,
    PAGE,
    ViewData,
    ViewServer,
    evidence_spans,
    outcome,
    percentile,
    write_html,
)
from tests.cli_support import run_cli
from tests.eval.test_eval_support import make_result
from tests.view_support import QUESTIONS

pytestmark = pytest.mark.usefixtures("loopback_only")

NAMES = ("keyword", "bm25", "killed")
SVG_NS = "http://www.w3.org/2000/svg"


@pytest.fixture
def runs(view_runs: Path) -> list[Run | PartialRun]:
    return [load_run(view_runs / name) for name in NAMES]


@pytest.fixture
def data(runs: list[Run | PartialRun]) -> ViewData:
    return ViewData(runs)


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text("utf-8").splitlines()]


def test_evidence_spans_mark_every_occurrence_merged_where_they_overlap() -> None:
    context = "abc xyz abc\nbcd"
    assert evidence_spans(context, ["abc", None, "", "c xy", "nowhere"]) == [[0, 6], [8, 11]]
    assert evidence_spans(context, ["bcd"]) == [[12, 15]]
    assert evidence_spans("", ["a"]) == []


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert (percentile(values, 0.5), percentile(values, 0.95)) == (50.0, 95.0)
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([], 0.5) is None


def test_the_leaderboard_has_each_runs_numbers_from_its_files(
    data: ViewData, view_runs: Path
) -> None:
    board = data.leaderboard()
    keys = [column["key"] for column in board["columns"]]
    assert "judge" in keys
    assert "recall@10" in keys
    keyword, bm25, killed = board["runs"]
    for entry, name in ((keyword, "keyword"), (bm25, "bm25")):
        manifest = json.loads((view_runs / name / "manifest.json").read_text("utf-8"))
        metrics = json.loads((view_runs / name / "metrics.json").read_text("utf-8"))
        latencies = sorted(r["retrieval_latency_s"] for r in _records(view_runs / name))
        assert entry["status"] == "complete"
        assert (entry["done"], entry["total"]) == (QUESTIONS, QUESTIONS)
        assert entry["latency_p50_s"] == latencies[2]  # nearest rank of 6: the 3rd
        assert entry["latency_p95_s"] == latencies[5]
        assert entry["blocks"]["overall"]["judge"] == metrics["overall"]["judge"]
        assert (
            entry["blocks"]["single-hop"]["recall@10"]
            == (metrics["by_category"]["single-hop"]["recall@10"])
        )
        phases = manifest["costs"]["phases"]
        assert entry["cost"]["calls"] == sum(p["calls"] for p in phases) > 0
        assert entry["cost"]["input_tokens"] == sum(p["input_tokens"] for p in phases)
        assert (entry["judge_model"], entry["wall_time_s"]) == ("fake", manifest["wall_time_s"])
        assert entry["recall"][2] == metrics["overall"]["recall@10"]  # ks 1, 5, 10, ...
        contexts = [r["context"] for r in _records(view_runs / name)]
        assert entry["context_chars"] == sum(map(len, contexts)) / QUESTIONS
    assert killed["status"] == "partial"
    assert (killed["total"], killed["cost"], killed["wall_time_s"]) == (QUESTIONS, None, None)
    assert killed["label"] == "bm25"


def test_the_index_and_a_question_follow_the_results(data: ViewData, view_runs: Path) -> None:
    records = _records(view_runs / "bm25")
    index = data.index(1)
    assert index["score_metric"] == "judge"
    assert index["question_id"] == [r["question_id"] for r in records]
    assert [index["categories"][c] for c in index["category"]] == [r["category"] for r in records]
    assert [index["outcomes"][o] for o in index["outcome"]] == [
        "correct" if r["judge"] >= 0.5 else "wrong" for r in records
    ]
    assert index["score"] == [r["judge"] for r in records]
    for n, record in enumerate(records):
        shown = data.question(1, n)
        assert (shown["question"], shown["answer"]) == (record["question"], record["answer"])
        assert shown["judge"] == record["judge"]
        assert shown["metrics"]["judge"] == record["judge"]
        marked = {shown["context"][a:b] for a, b in shown["evidence_spans"]}
        assert marked == {t for t in record["evidence_texts"] if t in record["context"]}
    with pytest.raises(IndexError):
        data.question(1, QUESTIONS)


def test_a_partial_run_has_its_finished_questions_unjudged(data: ViewData) -> None:
    index = data.index(2)
    killed = data.run(2)
    assert len(index["question_id"]) == len(killed.results)
    assert index["score_metric"] == "recall@10"
    assert all(math.isnan(j) for j in killed.judge)
    assert set(index["outcomes"]) == set(OUTCOMES)


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def test_the_server_hands_out_the_page_and_each_document(data: ViewData) -> None:
    with ViewServer(data).start() as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.url)
        status, page = _get(server.url)
        assert status == 200
        assert b"default-src 'none'" in page  # nothing but this server, by policy
        assert json.loads(_get(server.url + "api/runs.json")[1]) == data.leaderboard()
        assert json.loads(_get(server.url + "api/index/1.json")[1]) == data.index(1)
        question = json.loads(_get(server.url + "api/question/1/4.json")[1])
        assert question == json.loads(json.dumps(data.question(1, 4)))
        for missing in ("api/question/1/6.json", "api/index/3.json", "api/x", "../etc/passwd"):
            assert _get(server.url + missing)[0] == 404


def test_the_single_file_embeds_everything_and_fetches_nothing(
    view_runs: Path, tmp_path: Path, data: ViewData
) -> None:
    out = tmp_path / "view.html"
    assert run_cli(["view", "--html", str(out), str(view_runs)]) == (0, "")
    html = out.read_text("utf-8")
    # The one URL is SVG's namespace, a name that is never fetched.
    assert not re.search(r"https?://|<link|\ssrc=|url\(|@import", html.replace(SVG_NS, ""))
    embedded = re.search(r'<script type="application/json" id="himga-runs">(.*?)</script>', html)
    assert embedded is not None
    board = json.loads(embedded[1])
    assert [run["path"] for run in board["runs"]] == [str(view_runs / n) for n in sorted(NAMES)]


def test_a_run_text_cannot_close_the_embedding_script(tmp_path: Path, view_runs: Path) -> None:
    run = load_run(view_runs / "bm25")
    assert isinstance(run, Run)
    hostile = dataclasses.replace(run.results[0], question="</script><script>alert(1)</script>")
    forged = Run(run.path, run.manifest, run.metrics, [hostile], run.judge[:1], (None,))
    out = tmp_path / "x.html"
    write_html(ViewData([forged]), out)
    assert "<script>alert(1)" not in out.read_text("utf-8")


def test_himga_view_says_what_it_cannot_show(view_runs: Path, tmp_path: Path) -> None:
    assert run_cli(["view", "--html", str(tmp_path / "x.html"), str(tmp_path)]) == (
        2,
        f"himga view: {tmp_path}: no himga eval run in it (no manifest.json, checkpoint.jsonl)\n"
        "himga view: error: no run to show\n",
    )
    code, stderr = run_cli(["view", "--port", "70000", str(view_runs)])
    assert code == 2
    assert "expected a port number 0..65535, got '70000'" in stderr
    code, stderr = run_cli(["view", "--html", str(tmp_path), str(view_runs / "bm25")])
    assert (code, stderr.startswith(f"himga view: error: cannot write {tmp_path}: ")) == (2, True)


def test_each_outcome_and_the_errors_a_question_shows() -> None:
    failed = MemoryCallError("s", "q", "retrieve", "TimeoutError", "too slow")
    results = [
        make_result(),  # evidence found once whitespace is collapsed
        make_result(context="nothing here"),
        make_result(evidence_texts=(None,)),  # no evidence text to look for
        make_result(memory_error=failed, context=""),
        make_result(error="RateLimitError: 429", prediction=None),
        make_result(),  # judged wrong
        make_result(),  # the judge failed
    ]
    judge = [math.nan] * 5 + [0.0, math.nan]
    errors = (None,) * 6 + ("no verdict in the reply",)
    run = PartialRun(Path("r"), {}, results, judge, {}, None, None, errors)
    names = [OUTCOMES[outcome(run, n)] for n in range(len(results))]
    assert names == ["correct", "wrong", "unscored", "error", "error", "wrong", "error"]
    data = ViewData([run])
    assert data.question(0, 3)["memory_error"]["message"] == "too slow"
    assert data.question(0, 4)["error"] == "RateLimitError: 429"
    assert data.question(0, 6)["judge_error"] == "no verdict in the reply"
    assert data.question(0, 0)["evidence_spans"] == []  # marked only where it is verbatim


def test_a_run_given_by_its_head_is_read_when_a_document_needs_it(
    view_runs: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "bm25"
    copy.mkdir()
    for file in (view_runs / "bm25").iterdir():
        copy.joinpath(file.name).write_bytes(file.read_bytes())
    head = load_head(copy)
    assert isinstance(head, RunHead)
    assert isinstance(load_head(view_runs / "killed"), PartialRun)  # a checkpoint is all it has
    data = ViewData([head])
    entry = data.leaderboard()["runs"][0]
    full = ViewData([load_run(copy)]).entry(0)
    # the leaderboard from the manifest and metrics alone: everything but the measurements
    assert entry["measured"] is False
    assert (entry["latency_p50_s"], entry["context_chars"]) == (None, None)
    unmeasured = ("measured", "latency_p50_s", "latency_p95_s", "context_chars")
    assert {k: v for k, v in entry.items() if k not in unmeasured} == {
        k: v for k, v in full.items() if k not in unmeasured
    }
    # a changed results.jsonl is found when it is read, as load_run finds it
    (copy / "results.jsonl").write_text("{}\n", "utf-8")
    with ViewServer(data).start() as server:
        status, body = _get(server.url + "api/runs.json")
        assert status == 200
        assert json.loads(body)["runs"][0]["label"] == "bm25"
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(server.url + "api/entry/0.json", timeout=10)
        assert failed.value.code == 500
        assert (
            "does not match the SHA-256 recorded in manifest.json" in failed.value.read().decode()
        )


def test_a_page_of_questions_is_chosen_and_cut_on_the_server(
    data: ViewData, view_runs: Path
) -> None:
    records = _records(view_runs / "bm25")
    listed = data.questions(1)
    assert listed["total"] == QUESTIONS
    assert [row[2] for row in listed["rows"]] == [r["question_id"] for r in records]
    wrong = data.questions(1, outcome="wrong")
    assert [row[2] for row in wrong["rows"]] == [
        r["question_id"] for r in records if r["judge"] < 0.5
    ]
    category = records[0]["category"]
    assert [row[0] for row in data.questions(1, category=category)["rows"]] == [
        n for n, r in enumerate(records) if r["category"] == category
    ]
    other = {r["question_id"]: r["judge"] >= 0.5 for r in _records(view_runs / "keyword")}
    split = [r["question_id"] for r in records if (r["judge"] >= 0.5) != other[r["question_id"]]]
    assert [row[2] for row in data.questions(1, disagree=True)["rows"]] == split
    assert data.questions(1, page=1)["rows"] == []  # 6 questions: one page
    with ViewServer(data).start() as server:
        status, body = _get(server.url + "api/questions/1.json?outcome=wrong&page=0")
        assert (status, json.loads(body)) == (200, wrong)
        for bad in ("outcome=nonsense", "page=-1", "page=x"):
            assert _get(server.url + f"api/questions/1.json?{bad}")[0] == 404


@given(total=st.integers(0, 3 * PAGE), page=st.integers(0, 4))
def test_the_pages_of_questions_cover_each_once_in_order(total: int, page: int) -> None:
    results = [make_result(question_id=f"q{n}") for n in range(total)]
    run = PartialRun(Path("r"), {}, results, [math.nan] * total, {}, None, None)
    data = ViewData([run])
    pages = [data.questions(0, page=p) for p in range(page + 1)]
    shown = [row[0] for listed in pages for row in listed["rows"]]
    assert shown == list(range(min(total, (page + 1) * PAGE)))
    assert all(listed["total"] == total for listed in pages)


def test_a_server_listens_before_it_has_its_runs(data: ViewData) -> None:
    with ViewServer().start() as server:
        assert _get(server.url)[0] == 200  # the page needs no run
        server.provide(data)
        assert json.loads(_get(server.url + "api/runs.json")[1]) == data.leaderboard()
        with pytest.raises(RuntimeError):
            server.provide(data)


def _page_from_index(data: ViewData, i: int, category: str, page: int) -> dict[str, Any]:
    """Run ``i``'s page of ``category`` as the single file makes it: from the full index."""
    index = data.index(i)
    chosen = [
        n
        for n in range(len(index["sample"]))
        if not category or index["categories"][index["category"][n]] == category
    ]
    rows = [
        [
            n,
            index["sample"][n],
            index["question_id"][n],
            index["categories"][index["category"][n]],
            index["text"][n],
            OUTCOMES[index["outcome"][n]],
            index["score"][n],
        ]
        for n in chosen[page * PAGE : (page + 1) * PAGE]
    ]
    return {
        "run": i,
        "categories": index["categories"],
        "outcomes": list(OUTCOMES),
        "score_metric": index["score_metric"],
        "total": len(chosen),
        "page": page,
        "rows": rows,
    }


def test_a_page_by_category_alone_is_the_index_s_without_building_it(
    runs: list[Run | PartialRun],
) -> None:
    # The first page of a 10,000-question run costs its 50 questions, not the whole index.
    for i, run in enumerate(runs):
        for category in ("", *dict.fromkeys(r.category for r in run.results), "none such"):
            for page in (0, 1):
                fast = ViewData(runs)
                listed = fast.questions(i, category=category, page=page)
                assert not fast._indexes
                assert listed == _page_from_index(ViewData(runs), i, category, page)


def test_prefetch_reads_the_runs_results_in_the_background_within_its_budget(
    view_runs: Path,
) -> None:
    heads = [load_head(view_runs / name) for name in NAMES]
    data = ViewData(heads)
    data.prefetch().join(timeout=60)
    assert all(data._loaded)
    assert data.entry(1, measure=False)["measured"] is True
    nothing = ViewData([load_head(view_runs / name) for name in NAMES])
    nothing.prefetch(budget=0).join(timeout=60)
    assert nothing.entry(1, measure=False)["measured"] is False


def test_a_run_not_read_yet_shows_its_pages_and_questions_from_its_checked_lines(
    view_runs: Path, tmp_path: Path
) -> None:
    # Before a large run is read whole, its first page and a question come from the lines
    # of results.jsonl (checked against the manifest's checksum): the same documents.
    names = ("keyword", "bm25")
    read = ViewData([load_run(view_runs / name) for name in names])
    for i, name in enumerate(names):
        records = _records(view_runs / name)
        for category in ("", records[0]["category"], "none such"):
            lazy = ViewData([load_head(view_runs / name) for name in names])
            assert lazy.questions(i, category=category) == read.questions(i, category=category)
            assert lazy._loaded == [None, None]  # nothing read whole
        lazy = ViewData([load_head(view_runs / name) for name in names])
        for n in range(len(records)):
            assert lazy.question(i, n) == read.question(i, n)
        with pytest.raises(IndexError):
            lazy.question(i, len(records))
        assert lazy._loaded == [None, None]
    # a changed file is not shown from its lines: it is read, and the read says why
    copy = tmp_path / "bm25"
    copy.mkdir()
    for file in (view_runs / "bm25").iterdir():
        copy.joinpath(file.name).write_bytes(file.read_bytes())
    (copy / "results.jsonl").write_text("{}\n", "utf-8")
    with pytest.raises(RunReadError, match="does not match the SHA-256"):
        ViewData([load_head(copy)]).questions(0)

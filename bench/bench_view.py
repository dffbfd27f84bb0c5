"""How fast ``himga view`` opens a 10,000-question run, served and as one HTML file.

Run by hand (never in the test suite)::

    uv run python bench/bench_view.py                # 5 rounds, figures to docs/bench_view/
    uv run python bench/bench_view.py --rounds 3 --questions 2000

The run is made once by ``himga eval`` itself (``bm25``, offline) on a generated
LongMemEval-layout file (``himga.benchmarks.longmemeval.synthetic``: one question per
sample, 3 sessions of 6 turns of ~300 characters) and kept under
``/tmp/himga-bench-view`` (reused when present; never commit it). Each round, in Debian's
Chromium (headless, Playwright, one browser for the whole bench, a fresh context per
measurement so nothing is cached):

* ``served``: from starting ``himga view RUN`` (a fresh interpreter: imports, reading
  and checking the run, building the documents) to the leaderboard, then the first
  page of the question list, then the first question rendered (``served_leaderboard``:
  to the first alone);
* ``html_write``: ``himga view --html FILE RUN``, the whole command;
* ``html_open``: from opening that file to the same three pages rendered
  (``html_open_leaderboard``: to the first).

``*_cpu``: the CPU seconds the server and the browser processes used meanwhile. On
2 cores shared by other jobs the wall times mostly measure waiting for a core; the
CPU seconds are the work itself, which an idle machine does in about that time (less
where the server and the browser overlap on two cores).

With ``--baseline REV`` the served measurements are made a second time, in the same
rounds, with the ``himga`` package of git revision ``REV`` (its ``src/`` extracted to a
temporary directory, first on ``PYTHONPATH``): ``served_leaderboard_baseline`` and
``served_baseline``, and the ratios of the medians. On a machine shared with other jobs
only such a same-run comparison says what a change did.

Variants are interleaved round by round; the medians go to ``docs/bench_view/view.json``
with the machine's load average, and ``docs/view.md`` quotes them. Target: each open
under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path("/tmp/himga-bench-view")
OUT = Path(__file__).resolve().parent.parent / "docs" / "bench_view" / "view.json"
PAGES = ("#/", "#/run/0", "#/run/0/q/0")


def make_run(questions: int) -> Path:
    """The bm25 run over ``questions`` generated questions (made once, then reused)."""
    from himga.benchmarks.longmemeval.synthetic import write_longmemeval
    from himga.runs import EvalRequest, evaluate_run

    run = ROOT / f"run-{questions}"
    if (run / "manifest.json").exists():
        return run
    ROOT.mkdir(parents=True, exist_ok=True)
    data = ROOT / f"longmemeval_s-{questions}.json"
    write_longmemeval(data, questions=questions, sessions=3, turns=6, turn_chars=300)
    shutil.rmtree(run, ignore_errors=True)
    request = EvalRequest(
        dataset="longmemeval_s",
        data_path=data,
        memory="bm25",
        preflight=False,
        out=run,
        show_progress=False,
    )
    evaluate_run(request)
    return run


def _rendered(page: Any, start: float) -> float:
    """Show each of :data:`PAGES` in turn; the seconds from ``start`` to the first shown."""
    first = 0.0
    for hash_ in PAGES:
        page.evaluate(f"location.hash = {hash_!r}")
        page.wait_for_selector(f'main[data-ready="{hash_}"]', timeout=600_000)
        first = first or time.perf_counter() - start
    return first


def _processes() -> dict[int, tuple[int, float]]:
    """Every process's parent and CPU seconds so far (user + system; Linux ``/proc``)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue  # ended meanwhile
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            found[int(entry.name)] = (int(fields[1]), cpu)
    return found


def _children_cpu() -> dict[int, float]:
    """CPU seconds used so far by each live process this one started, and theirs (the
    browser's processes, its driver, a server)."""
    table = _processes()
    mine = {os.getpid()}
    grown = True
    while grown:
        more = {pid for pid, (parent, _) in table.items() if parent in mine} - mine
        grown = bool(more)
        mine |= more
    return {pid: table[pid][1] for pid in mine - {os.getpid()}}


def _used(before: dict[int, float]) -> float:
    """CPU seconds the children used since ``before`` (per process: one that ended
    meanwhile, a closed page's, drops out instead of being counted negative)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in _children_cpu().items())


def served(browser: Any, run: Path, source: Path | None = None) -> tuple[float, float, float]:
    """Seconds to the leaderboard, to the three pages, and the CPU seconds the server and
    the browser used meanwhile; with ``source``, the ``himga`` package there serves."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    before = _children_cpu()
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "himga", "view", str(run)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().split(" at ")[1].split()[0]
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        first = _rendered(page, start)
        elapsed = time.perf_counter() - start
        cpu = _used(before)
        context.close()
    finally:
        child.terminate()
        child.wait()
    return first, elapsed, cpu


def html_write(run: Path, file: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "himga", "view", "--html", str(file), str(run)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def html_open(browser: Any, file: Path) -> tuple[float, float, float]:
    """Seconds to the leaderboard, to the three pages, and the browser's CPU seconds."""
    context = browser.new_context()
    page = context.new_page()
    before = _children_cpu()
    start = time.perf_counter()
    page.goto(file.as_uri())
    first = _rendered(page, start)
    elapsed = time.perf_counter() - start
    cpu = _used(before)
    context.close()
    return first, elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--baseline", metavar="REV", help="also serve with himga at git REV")
    parser.add_argument(
        "--served-only", action="store_true", help="measure the served viewer alone (no --html)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    run = make_run(args.questions)
    file = ROOT / "view.html"
    names: tuple[str, ...] = ("served_leaderboard", "served", "served_cpu")
    if not args.served_only:
        names += ("html_write", "html_open_leaderboard", "html_open", "html_open_cpu")
    baseline = None
    if args.baseline:
        names += ("served_leaderboard_baseline", "served_baseline", "served_cpu_baseline")
        baseline = Path(tempfile.mkdtemp(prefix="himga-baseline-"))
        archive = subprocess.run(
            ["git", "archive", args.baseline, "src"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
    times: dict[str, list[float]] = {name: [] for name in names}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for round_ in range(args.rounds):
            measured: tuple[float, ...] = served(browser, run)
            if not args.served_only:
                measured += (html_write(run, file), *html_open(browser, file))
            if baseline is not None:
                measured += served(browser, run, baseline / "src")
            for name, value in zip(names, measured, strict=True):
                times[name].append(value)
            print(round_, {k: round(v[-1], 3) for k, v in times.items()}, flush=True)
        version = browser.version
        browser.close()
    if baseline is not None:
        shutil.rmtree(baseline)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    medians = {k: statistics.median(v) for k, v in times.items()}
    figures: dict[str, Any] = {
        "measured": f"himga view at {commit}",
        "baseline": f"himga view at {args.baseline}, served in the same rounds"
        if args.baseline
        else None,
        "questions": args.questions,
        "rounds": args.rounds,
        "median_s": {k: round(v, 3) for k, v in medians.items()},
        "ratio_to_baseline": None
        if baseline is None
        else {
            k: round(medians[k] / medians[f"{k}_baseline"], 3)
            for k in ("served_leaderboard", "served", "served_cpu")
        },
        "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "results_jsonl_mb": round((run / "results.jsonl").stat().st_size / 1e6, 1),
        "html_mb": None if args.served_only else round(file.stat().st_size / 1e6, 1),
        "chromium": version,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "target_s": 2.0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
    print(json.dumps(figures["median_s"]), f"-> {args.out}")


if __name__ == "__main__":
    main()

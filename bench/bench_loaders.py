"""Wall time and peak RSS of the LongMemEval loaders against plain ``json.load``.

Run by hand (never in the test suite)::

    uv run python bench/bench_loaders.py            # LongMemEval_S-sized: 500 q x 50 sessions
    uv run python bench/bench_loaders.py --questions 50 --sessions 500   # _M-like elements

A generated file in the official layout (``himga.benchmarks.longmemeval.synthetic``) is written to
``/tmp`` (reused when present; never commit it). Every measurement runs in a
fresh interpreter, so ``ru_maxrss`` is the peak of that variant alone; variants
are interleaved run by run, and medians are reported with the ratio to
``json.load`` measured in the same session.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("imports", "json.load", "load_dataset", "iter_dataset")


def _child(variant: str, path: Path) -> None:
    """Measure one variant in this (fresh) process; print a JSON line."""
    from himga.benchmarks import iter_dataset, load_dataset

    start = time.perf_counter()
    cpu_start = time.process_time()
    if variant == "imports":
        count = 0
    elif variant == "json.load":
        with path.open(encoding="utf-8") as handle:
            count = len(json.load(handle))
    elif variant == "load_dataset":
        count = len(load_dataset("longmemeval_s", path=path))
    elif variant == "iter_dataset":
        count = sum(1 for _ in iter_dataset("longmemeval_s", path=path))
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(
        json.dumps(
            {"variant": variant, "samples": count, "wall": wall, "cpu": cpu, "peak_mb": peak_mb}
        )
    )


def _measure(variant: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", variant, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--turn-chars", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), help="what to measure"
    )
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]))
        return
    if args.generate:
        from himga.benchmarks.longmemeval.synthetic import write_longmemeval

        questions, sessions, turns, turn_chars = map(int, args.generate[1:])
        target = Path(args.generate[0])
        # Written aside and renamed: an interrupted run must not leave a partial
        # file that later runs would reuse.
        partial = target.with_name(target.name + ".part")
        write_longmemeval(
            partial,
            questions=questions,
            sessions=sessions,
            turns=turns,
            turn_chars=turn_chars,
        )
        os.replace(partial, target)
        return

    shape = (args.questions, args.sessions, args.turns, args.turn_chars)
    path = Path(f"/tmp/himga_bench_lme_{'x'.join(map(str, shape))}.json")
    if not path.exists():
        # In a child too: on Linux a forked child starts with its parent's peak RSS,
        # so this process must stay small for the children's ru_maxrss to be theirs.
        subprocess.run(
            [sys.executable, __file__, "--generate", str(path), *map(str, shape)], check=True
        )
    size_mb = path.stat().st_size / 1e6
    variants = [v for v in VARIANTS if v in args.variants]
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(args.runs):
        for variant in variants:
            runs[variant].append(_measure(variant, path))

    baseline = (
        statistics.median(r["wall"] for r in runs["json.load"]) if "json.load" in runs else None
    )
    print(
        f"file: {path.name}, {size_mb:.0f} MB, {args.questions} questions x {args.sessions} "
        f"sessions x {args.turns} turns; medians of {args.runs} runs (fresh process each)\n"
    )
    print("| variant | wall (s) | CPU (s) | MB/s (wall) | wall vs json.load | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant in variants:
        wall = statistics.median(r["wall"] for r in runs[variant])
        cpu = statistics.median(r["cpu"] for r in runs[variant])
        peak = statistics.median(r["peak_mb"] for r in runs[variant])
        if variant == "imports":
            print(f"| (interpreter + imports only) | - | - | - | - | {peak:.0f} |")
            continue
        print(
            f"| `{variant}` | {wall:.2f} | {cpu:.2f} | {size_mb / wall:.0f} "
            f"| {'-' if baseline is None else f'{wall / baseline:.2f}x'} | {peak:.0f} |"
        )


if __name__ == "__main__":
    main()

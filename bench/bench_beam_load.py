"""Peak RSS and wall time of loading the BEAM 100K tier (the shared conversations 1-10).

Run by hand (never in the test suite)::

    HIMGA_DATA_DIR=../shared/datasets uv run python bench/bench_beam_load.py

Every measurement runs in a fresh interpreter, so ``ru_maxrss`` is the peak of
that variant alone: ``imports`` (himga and the registry, nothing read),
``load_dataset`` (every sample held in a list at once) and ``iter_dataset``
(samples streamed, one alive at a time). Variants are interleaved run by run;
medians are reported. The target of issue 23 is a peak under 200 MB for the
whole tier.

``--replicate N`` reads a tier of N times the shared conversations instead
(symbolic links to them in a temporary folder, numbered 1..10N): ``2`` is the
size of the full 100K tier (20 conversations), larger values show how each
variant grows.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = ("imports", "load_dataset", "iter_dataset")


def _child(variant: str, path: str | None) -> None:
    """Measure one variant in this (fresh) process; print a JSON line."""
    from himga.benchmarks import iter_dataset, load_dataset

    start = time.perf_counter()
    if variant == "imports":
        samples = questions = turns = 0
    elif variant == "load_dataset":
        loaded = load_dataset("beam-100k", path=path, download=False)
        samples = len(loaded)
        questions = sum(len(s.qa_pairs) for s in loaded)
        turns = sum(1 for s in loaded for _ in s.iter_turns())
    elif variant == "iter_dataset":
        samples = questions = turns = 0
        for sample in iter_dataset("beam-100k", path=path, download=False):
            samples += 1
            questions += len(sample.qa_pairs)
            turns += sum(1 for _ in sample.iter_turns())
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(
        json.dumps(
            {
                "variant": variant,
                "samples": samples,
                "questions": questions,
                "turns": turns,
                "wall": wall,
                "peak_mb": peak_mb,
            }
        )
    )


def _measure(variant: str, path: str | None) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", variant]
    if path is not None:
        command += ["--path", path]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _replicated(scratch: Path, copies: int) -> Path:
    """A tier folder of ``copies`` times the shared conversations, as symbolic links."""
    from himga.benchmarks import resolve_dataset

    source = resolve_dataset("beam-100k", download=False).path
    names = sorted((p for p in source.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    tier = scratch / "100K"
    tier.mkdir()
    for copy in range(copies):
        for offset, folder in enumerate(names, 1):
            (tier / str(copy * len(names) + offset)).symlink_to(folder.resolve())
    return tier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replicate", type=int, default=None, metavar="N")
    parser.add_argument("--child", metavar="VARIANT", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.path)
        return
    with tempfile.TemporaryDirectory() as scratch:
        path = None if args.replicate is None else str(_replicated(Path(scratch), args.replicate))
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        for _ in range(args.runs):
            for variant in VARIANTS:
                runs[variant].append(_measure(variant, path))
    print(
        f"{'variant':<14} {'samples':>7} {'questions':>9} {'turns':>6} {'wall s':>7} {'peak MB':>8}"
    )
    for variant, measured in runs.items():
        last = measured[-1]
        wall = statistics.median(m["wall"] for m in measured)
        peak = statistics.median(m["peak_mb"] for m in measured)
        print(
            f"{variant:<14} {last['samples']:>7.0f} {last['questions']:>9.0f} "
            f"{last['turns']:>6.0f} {wall:>7.3f} {peak:>8.1f}"
        )


if __name__ == "__main__":
    main()

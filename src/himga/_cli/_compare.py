"""``himga compare RUN_A RUN_B [...]``: paired differences with bootstrap CIs and p-values."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from himga._cli._options import path
from himga._extras import MissingExtraError
from himga.benchmarks._errata import ErrataError, read_errata
from himga.eval._paired import DEFAULT_RESAMPLES, MAX_RESAMPLES
from himga.runs import (
    DEFAULT_METRICS,
    METRIC_TITLES,
    CompareError,
    PublishedClaim,
    PublishedError,
    RunDir,
    RunDirError,
    RunReadError,
    compare_runs,
    format_comparison,
    format_published,
    plot_comparison,
    published_for,
)
from himga.runs._gold_errors import format_gold_errors, gold_error_panel
from himga.runs._rundir import guard_output

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser = commands.add_parser(
        "compare",
        help="compare runs question by question, with bootstrap CIs and permutation p-values",
        description=(
            "Compare each RUN with the first (the baseline), per category and overall: for "
            "every metric, the mean difference over the questions both runs scored (paired "
            "by sample and question id), its paired bootstrap confidence interval and a "
            "paired permutation (sign-flip) p-value. Runs on different datasets or question "
            "sets are refused. Markdown on stdout; --json for the numbers, --plot for a "
            "figure. Needs numpy (the stats extra); --plot matplotlib (plot). Exit status: "
            "0 compared, 2 cannot compare."
        ),
    )
    parser.add_argument("runs", nargs="+", type=path, metavar="RUN", help="run directories")
    parser.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="NAME",
        help="metric to compare, by key or column title (repeatable; default: every one "
        f"the runs have of {', '.join(METRIC_TITLES[m] for m in DEFAULT_METRICS)})",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=(
            f"bootstrap resamples and permutations (default {DEFAULT_RESAMPLES:,}, "
            f"at most {MAX_RESAMPLES:,})"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--plot", type=path, default=None, metavar="FILE", help="save a figure")
    parser.add_argument(
        "--published",
        action="store_true",
        help="add the published claims on the runs' benchmark, marked published, not re-run",
    )
    parser.add_argument(
        "--errata",
        type=path,
        default=None,
        metavar="FILE|NAME",
        help="also show each run's raw accuracy, its accuracy without the questions whose "
        "gold these errata judge wrong, and the ceiling (himga report --errata)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the comparison; 2 when the runs cannot be read or compared."""
    # The products are small (resamples x questions); OpenBLAS threads only fight
    # over the cores then (2.4x the CPU time measured on 2 cores). Before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if len(args.runs) < 2:
        print("himga compare: error: give at least two runs", file=sys.stderr)
        return 2
    for problem in (
        not 1 <= args.resamples <= MAX_RESAMPLES
        and f"--resamples must be between 1 and {MAX_RESAMPLES:,}",
        args.seed < 0 and "--seed must be >= 0",
        args.plot is not None and args.plot.is_dir() and f"--plot {args.plot} is a directory",
    ):
        if problem:
            print(f"himga compare: error: {problem}", file=sys.stderr)
            return 2
    claims: list[PublishedClaim] | None = None
    try:
        if args.plot is not None:
            guard_output(args.plot)
        runs = [RunDir(path).read() for path in args.runs]
        comparison = compare_runs(
            runs, metrics=args.metric, resamples=args.resamples, seed=args.seed
        )
        if args.plot is not None:
            plot_comparison(comparison, args.plot)
        if args.published:
            claims = published_for(runs[0].dataset_name)
        errata = None if args.errata is None else read_errata(args.errata)
        gold = [] if errata is None else [row for r in runs for row in gold_error_panel(r, errata)]
    except (
        CompareError,
        RunReadError,
        RunDirError,
        MissingExtraError,
        PublishedError,
        ErrataError,
    ) as exc:
        print(f"himga compare: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # only the figure is written
        print(f"himga compare: error: cannot write {args.plot}: {exc.strerror}", file=sys.stderr)
        return 2
    for warning in comparison.warnings:
        print(f"himga compare: warning: {warning}", file=sys.stderr)
    if args.json:
        document = comparison.to_dict()
        if claims is not None:
            document["published"] = [dataclasses.asdict(claim) for claim in claims]
        if errata is not None:
            document["gold_errors"] = {
                "errata": errata.source,
                "sha256": errata.sha256,
                "runs": [row.to_dict() for row in gold],
            }
        print(json.dumps(document, indent=2))
    else:
        print(format_comparison(comparison))
        if claims is not None:
            print("\n" + "\n".join(format_published(runs[0].dataset_name, claims)))
        if errata is not None:
            print("\n" + format_gold_errors(gold, errata), end="")
    return 0

"""``himga runs [DIR]``: list the run directories in DIR, finished, failed or partial."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from himga._cli._options import path as path_argument
from himga.runs import RunReadError, find_runs, format_runs, load_run, summarize_run

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``runs`` subcommand."""
    parser = commands.add_parser(
        "runs",
        help="list runs: benchmark, memory, status, questions done, headline metric, date",
        description=(
            "List DIR (default runs/), or the run directories directly in it: benchmark, "
            "memory and arguments, status (complete; failed: some questions failed; partial: "
            "no manifest yet, under way or killed, read from its checkpoint), questions "
            "done/planned, the headline metric (judge, else R@10, else ctx-any, else F1) "
            "and when it started. Exit status 2 when DIR holds no run or a run cannot be "
            "read (the others are still listed)."
        ),
    )
    parser.add_argument(
        "dir",
        type=path_argument,
        nargs="?",
        default=Path("runs"),
        metavar="DIR",
        help="runs directory",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the table of runs; 2 when there is none or one cannot be read."""
    try:
        paths = find_runs(args.dir)
    except RunReadError as exc:
        print(f"himga runs: error: {exc}", file=sys.stderr)
        return 2
    summaries = []
    unreadable = 0
    for path in paths:
        try:
            summaries.append(summarize_run(load_run(path)))
        except RunReadError as exc:
            print(f"himga runs: cannot read {path}: {exc}", file=sys.stderr)
            unreadable += 1
    if summaries:
        print(format_runs(summaries))
    return 2 if unreadable else 0

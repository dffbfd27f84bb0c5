"""``himga merge``: join the shard run directories of one run into the run directory of it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from himga._cli._options import path
from himga.eval import CheckpointMismatchError
from himga.runs import MergeError, RunDirError, RunReadError, merge_runs

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "merge",
        help="join the run directories of himga eval --shard I/N into one run",
        description=(
            "Check that the shard runs share one run identity and dataset, that together "
            "they hold every question exactly once, and write one run directory with the "
            "content of a single run (results in dataset order, metrics recomputed). "
            "Exit status: 0 merged, 2 the shards do not make one complete run."
        ),
    )
    parser.add_argument("runs", nargs="+", type=path, metavar="RUN", help="shard run directories")
    parser.add_argument("--out", type=path, required=True, help="merged run directory (new)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        merged = merge_runs(args.runs, args.out)
    except (MergeError, RunReadError, RunDirError, CheckpointMismatchError) as exc:
        print(f"himga merge: error: {exc}", file=sys.stderr)
        return 2
    print(f"merged {len(args.runs)} shards: {merged} questions; wrote {args.out}")
    return 0

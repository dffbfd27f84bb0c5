"""``himga datasets``: the known datasets, where each resolves (or why not), and their stats."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from himga._cli._options import path
from himga.benchmarks import BenchmarkLoadError, benchmarks, iter_dataset, resolve_dataset
from himga.data import DatasetError, DatasetNotFoundError, dataset_stats
from himga.data._stats import CHARS_PER_TOKEN

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``datasets`` subcommand."""
    parser = commands.add_parser(
        "datasets",
        help="list the known datasets, where each resolves, and their statistics",
        description=(
            "List the known datasets, where each resolves (explicit path, $HIMGA_DATA_DIR, "
            "the cache) and, for those found, samples, questions per category, turns and "
            f"approximate tokens (characters / {CHARS_PER_TOKEN}). Never downloads."
        ),
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="datasets to show (default: every registered benchmark)",
    )
    parser.add_argument(
        "--data-path",
        "--path",
        dest="data_path",
        type=path,
        metavar="DATA_PATH",
        help="read NAME from this file or directory (one NAME only), as himga eval's "
        "--data-path (--path: its old name here, kept for one release)",
    )
    parser.add_argument("--no-stats", action="store_true", help="only show where each resolves")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="list every known quirk of the files (file, sample, field), not only their counts",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; exit code 1 if a dataset that resolved is malformed or its plug-in
    fails, 2 on bad usage (said on stderr), including a ``--data-path`` that holds no copy."""
    known = benchmarks()
    names: list[str] = args.names or list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(
            f"himga datasets: unknown dataset(s) {', '.join(unknown)}; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    if args.data_path is not None and len(names) != 1:
        print("himga datasets: --data-path needs exactly one NAME", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        benchmark = known[name]
        print(f"{name}: {benchmark.description} (license: {benchmark.license})")
        try:
            resolution = resolve_dataset(name, path=args.data_path, download=False)
        except DatasetNotFoundError as exc:
            if args.data_path is not None:  # asked for that copy: its absence is no listing
                print(f"himga datasets: {exc}", file=sys.stderr)
                return 2
            print(f"  not found: {exc}")
            continue
        except BenchmarkLoadError as exc:
            print(f"  broken: {exc}")
            status = 1
            continue
        print(f"  resolves to {resolution.path} (from {resolution.source})")
        if args.no_stats:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                stats = dataset_stats(iter_dataset(name, path=resolution.path, download=False))
            except (DatasetError, BenchmarkLoadError) as exc:
                print(f"  malformed: {exc}")
                status = 1
                continue
        print(
            f"  samples {stats.samples:,} | sessions {stats.sessions:,} | turns {stats.turns:,}"
            f" | questions {stats.questions:,} | ~{stats.approx_tokens:,} tokens"
        )
        order = {category: i for i, category in enumerate(benchmark.categories)}
        per_category = sorted(
            stats.questions_per_category.items(),
            key=lambda kv: (order.get(kv[0], len(order)), kv[0]),
        )
        print("  questions per category: " + ", ".join(f"{c} {n:,}" for c, n in per_category))
        for warning in caught:
            print(f"  warning: {warning.message}")
            if args.verbose:
                for detail in getattr(warning.message, "details", ()):
                    print(f"    {detail}")
    return status

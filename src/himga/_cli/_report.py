"""``himga report RUN``: one markdown file with a run's table, its manifest in prose, and plots."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from himga._cli._options import path
from himga._extras import MissingExtraError
from himga.eval import format_table
from himga.runs import RunDir, RunReadError, plot_report, render_report, write_text_atomic

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = commands.add_parser(
        "report",
        help="write a markdown report of a run: its table, its manifest in prose, plots",
        description=(
            "Write RUN/report.md (or --out): the per-category table, what was run on what "
            "and when, the cost in tokens, and a per-category plot (report.png beside it; "
            "needs the plot extra, otherwise the report says so). Exit status 2 when the "
            "run cannot be read or the report cannot be written."
        ),
    )
    parser.add_argument("run", type=path, metavar="RUN", help="a himga eval run directory")
    parser.add_argument("--out", type=path, default=None, help="report file (RUN/report.md)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; 2 when the run cannot be read or the report written."""
    try:
        loaded = RunDir(args.run).read()
    except RunReadError as exc:
        print(f"himga report: error: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out or args.run / "report.md"
    if out.is_dir():
        print(f"himga report: error: --out {out} is a directory: give a file name", file=sys.stderr)
        return 2
    plot = out.with_suffix(".png")
    try:
        plot_report(loaded, plot)
        figure = f"![per-category metrics]({plot.name})"
    except MissingExtraError as exc:
        figure = f"No plot: {exc}."
    except OSError as exc:
        return _cannot_write(plot, exc)
    table = format_table(loaded.metrics, dataset=loaded.manifest.dataset.name)
    try:
        write_text_atomic(out, render_report(loaded, table, figure))
    except OSError as exc:
        return _cannot_write(out, exc)
    print(f"wrote {out}" + (f" and {plot}" if plot.exists() else ""))
    return 0


def _cannot_write(path: Path, exc: OSError) -> int:
    print(f"himga report: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
    return 2

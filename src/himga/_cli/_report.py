"""``himga report RUN``: one markdown file with a run's table, its manifest in prose, and plots."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from himga._cli._options import path
from himga._extras import MissingExtraError
from himga.benchmarks._errata import ErrataError, read_errata
from himga.eval import compute_measurements, format_table
from himga.runs import (
    METRIC_TITLES,
    CompareError,
    PartialRun,
    PublishedError,
    Run,
    RunDir,
    RunDirError,
    RunReadError,
    arm_comparison,
    format_arm_split,
    format_judges,
    format_published,
    load_run,
    plot_report,
    published_for,
    render_report,
)
from himga.runs._files import write_text_atomic
from himga.runs._gold_errors import format_gold_errors, gold_error_panel
from himga.runs._rundir import guard_output

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = commands.add_parser(
        "report",
        help="write a markdown report of a run: its table, its manifest in prose, plots",
        description=(
            "Write RUN/report.md (or --out: a .md file, never over a file of another run "
            "directory): the per-category table, what was run on what "
            "and when, the cost in tokens (and per correct answer), and a per-category plot "
            "(report.png beside it; needs the plot extra, otherwise the report says so). "
            "A run without a manifest (under way, or killed) is reported from its "
            "checkpoint, marked partial. Exit status 2 when the run cannot be read or "
            "the report cannot be written."
        ),
    )
    parser.add_argument("run", type=path, metavar="RUN", help="a himga eval run directory")
    parser.add_argument("--out", type=path, default=None, help="report file (RUN/report.md)")
    parser.add_argument(
        "--reference",
        action="append",
        type=path,
        default=[],
        metavar="RUN",
        help="a run of the same questions under another arm (LLM only: --memory null; "
        "oracle: --arm oracle; full context: --memory full), repeatable: the report says "
        "how much of the judge accuracy is memory and how much reader",
    )
    parser.add_argument(
        "--published",
        action="store_true",
        help="add the published claims on the run's benchmark, marked published, not re-run",
    )
    parser.add_argument(
        "--errata",
        type=path,
        default=None,
        metavar="FILE|NAME",
        help="add raw accuracy, accuracy without the questions whose gold these errata judge "
        "wrong, and the ceiling (a file, or a fetched published one: himga errata fetch NAME)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; 2 when the run cannot be read or the report written."""
    try:
        loaded = load_run(args.run)
        measured = loaded.metrics if isinstance(loaded, PartialRun) else loaded.measured()
    except RunReadError as exc:
        print(f"himga report: error: {exc}", file=sys.stderr)
        return 2
    if measured != loaded.metrics:
        print(
            f"himga report: note: {loaded.path / 'metrics.json'} differs from what "
            "results.jsonl measures (edited, or written by another himga); the report "
            "shows the results' metrics, as compare does",
            file=sys.stderr,
        )
        loaded = dataclasses.replace(loaded, metrics=measured)
    try:
        # Before anything is written: bad errata leave no half-made report behind.
        gold_errors = _gold_errors(loaded, args.errata)
    except ErrataError as exc:
        print(f"himga report: error: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out or args.run / "report.md"
    if out.is_dir():
        print(f"himga report: error: --out {out} is a directory: give a file name", file=sys.stderr)
        return 2
    if out.suffix.lower() != ".md":
        # The report is markdown; its figure is written beside it, as .png.
        print(f"himga report: error: --out {out}: give a .md file name", file=sys.stderr)
        return 2
    plot = out.with_suffix(".png")
    own = (args.run / "report.md", args.run / "report.png")
    try:
        for target in (out, plot):
            guard_output(target, own=own)
    except RunDirError as exc:
        print(f"himga report: error: --out {exc}", file=sys.stderr)
        return 2
    try:
        plot_report(loaded, plot)
        figure = f"![per-category metrics]({plot.name})"
    except MissingExtraError as exc:
        figure = f"No plot: {exc}."
    except OSError as exc:
        return _cannot_write(plot, exc)
    partial = isinstance(loaded, PartialRun)
    try:
        sections = _sections(args, loaded)
    except (CompareError, RunReadError, RunDirError, PublishedError) as exc:
        print(f"himga report: error: {exc}", file=sys.stderr)
        return 2
    table = format_table(
        loaded.metrics,
        dataset=loaded.dataset_name,
        measurements=compute_measurements(loaded.results),
    )
    if not isinstance(loaded, PartialRun) and (judges := format_judges(loaded)):
        table += "\n\n" + judges
    if gold_errors is not None:
        sections.append(gold_errors)
    try:
        write_text_atomic(out, render_report(loaded, table, figure, sections=sections))
    except OSError as exc:
        return _cannot_write(out, exc)
    print(
        f"wrote {out}"
        + (f" and {plot}" if plot.exists() else "")
        + (" (partial: the run has no manifest yet)" if partial else "")
    )
    return 0


def _sections(args: argparse.Namespace, loaded: Run | PartialRun) -> list[str]:
    """The report's closing sections: the arms of ``--reference`` runs, the published
    claims (``--published``); ``CompareError`` for references that do not pair with the run."""
    sections: list[str] = []
    if args.reference:
        if isinstance(loaded, PartialRun):
            raise CompareError("--reference needs a finished run (this one has no manifest)")
        split = arm_comparison([loaded, *(RunDir(path).read() for path in args.reference)])
        sections.append(
            "## Memory and reader\n\n"
            + (
                "No question was judged in every run (or every run is of the memory arm): "
                "nothing to split."
                if split is None
                else "\n".join(
                    format_arm_split(
                        split,
                        metric=METRIC_TITLES.get(split["metric"], split["metric"]),
                        group=split["group"],
                        n=split["n"],
                    )
                )
            )
        )
    if args.published:
        claims = published_for(loaded.dataset_name)
        sections.append("\n".join(format_published(loaded.dataset_name, claims)))
    return sections


def _gold_errors(loaded: Run | PartialRun, source: Path | None) -> str | None:
    """The report's gold-error section, ``None`` without errata; :class:`ErrataError`."""
    if source is None:
        return None
    errata = read_errata(source)
    return format_gold_errors(gold_error_panel(loaded, errata), errata)


def _cannot_write(path: Path, exc: OSError) -> int:
    print(f"himga report: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
    return 2

"""``himga report RUN``: one markdown file with a run's table, its manifest in prose, and plots."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from himga._cli._runs import METRIC_TITLES, Run, RunReadError, load_run
from himga._extras import MissingExtraError, require
from himga.eval import format_table

__all__ = ["register", "run"]

_PLOTTED = ("judge", "f1", "context_recall_any", "recall@10")


def register(commands: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = commands.add_parser(
        "report",
        help="write a markdown report of a run: its table, its manifest in prose, plots",
        description=(
            "Write RUN/report.md (or --out): the per-category table, what was run on what "
            "and when, the cost in tokens, and a per-category plot (report.png beside it; "
            "needs the plot extra, otherwise the report says so). Exit status 2 when the "
            "run cannot be read."
        ),
    )
    parser.add_argument("run", type=Path, metavar="RUN", help="a himga eval run directory")
    parser.add_argument("--out", type=Path, default=None, help="report file (RUN/report.md)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; 2 when the run cannot be read."""
    try:
        loaded = load_run(args.run)
    except RunReadError as exc:
        print(f"himga report: error: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out or args.run / "report.md"
    plot = out.with_suffix(".png")
    try:
        _plot(loaded, plot)
        figure = f"![per-category metrics]({plot.name})"
    except MissingExtraError as exc:
        figure = f"No plot: {exc}."
    out.write_text(render_report(loaded, figure), "utf-8")
    print(f"wrote {out}" + (f" and {plot}" if plot.exists() else ""))
    return 0


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def render_report(run: Run, figure: str) -> str:
    """The report's markdown; ``figure`` is the plot's markdown (or why there is none)."""
    manifest = run.manifest
    memory = manifest.get("memory", {})
    dataset = manifest.get("dataset", {})
    llm = manifest.get("llm")
    judge = manifest.get("judge")
    tokens = manifest.get("tokens", {})
    counts = run.metrics.get("counts", {})
    arguments = memory.get("arguments") or {}
    given = ", ".join(f"`{k}={v!r}`" for k, v in arguments.items()) or "no arguments"
    provider = (
        f"distribution {memory['distribution']} {memory.get('version')}"
        if memory.get("distribution")
        else "no installed distribution (a local module)"
    )
    what = [
        f"Memory `{memory.get('spec')}` (`{memory.get('target', memory.get('class'))}`, "
        f"{given}), an instance of `{memory.get('class')}` whose repr is "
        f"`{memory.get('repr')}`, provided by {provider}; its source "
        f"({_count(memory.get('source_files'))} files) hashes to "
        f"`{str(memory.get('source_sha256'))[:16]}…`.",
    ]
    if llm is None:
        what.append("No LLM: the run measured retrieval only (nothing was answered or judged).")
    else:
        what.append(
            f"Answers by {llm.get('provider')} model `{llm.get('model')}` "
            f"(temperature {llm.get('temperature')}, {llm.get('max_concurrency')} calls in "
            f"flight, base URL {llm.get('base_url')})."
        )
        if judge is None:
            what.append("The answers were not judged.")
        else:
            what.append(
                f"Judged by {judge.get('provider')} model `{judge.get('model')}` "
                f"({judge.get('errors')} judge errors)."
            )
    preflight = manifest.get("preflight")
    if preflight is None:
        what.append("Pre-flight was skipped (`--no-preflight`).")
    else:
        what.append(
            f"Pre-flight passed {', '.join(preflight.get('checked', []))} in "
            f"{preflight.get('seconds')} s"
            + (f" ({preflight['limited']})." if preflight.get("limited") else ".")
        )
    on_what = (
        f"Dataset `{dataset.get('name')}` at `{dataset.get('path')}` (sha256 "
        f"`{dataset.get('sha256')}`): {_count(dataset.get('samples'))} samples, "
        f"{_count(dataset.get('questions'))} questions"
        + (f" (`--limit {dataset['limit']}`)." if dataset.get("limit") else ".")
    )
    when = (
        f"Started {manifest.get('started_at')}, finished {manifest.get('finished_at')} "
        f"({manifest.get('wall_time_s')} s wall) with himga {manifest.get('himga_version')} "
        f"on Python {manifest.get('python')} ({manifest.get('platform')}); "
        f"{_count(manifest.get('resumed', 0))} results resumed from a checkpoint. "
        f"Run identity `{manifest.get('run_identity')}`."
    )
    usage = tokens.get("client_usage_this_invocation") or {}
    cost = (
        f"Answer tokens: {_count(tokens.get('answer_input', 0))} in, "
        f"{_count(tokens.get('answer_output', 0))} out (summed over the results)."
    )
    if usage:
        cost += (
            f" The client counted {_count(usage.get('calls'))} calls in this invocation "
            f"(answers and judge): {_count(usage.get('input_tokens'))} tokens in, "
            f"{_count(usage.get('output_tokens'))} out."
        )
    outcome = (
        f"{_count(counts.get('questions'))} questions: {_count(counts.get('memory_errors', 0))} "
        f"memory errors (excluded from the metrics), {_count(counts.get('answered'))} answered, "
        f"{_count(counts.get('errors'))} LLM errors, {_count(counts.get('judged'))} judged."
    )
    return "\n".join(
        [
            f"# himga run report: `{run.label}` on `{dataset.get('name')}`",
            "",
            f"Run directory `{run.path}`.",
            "",
            "## Results",
            "",
            "```text",
            format_table(run.metrics, dataset=run.manifest.get("dataset", {}).get("name")),
            "```",
            "",
            outcome,
            "",
            figure,
            "",
            "## What was run",
            "",
            " ".join(what),
            "",
            "## On what",
            "",
            on_what,
            "",
            "## When",
            "",
            when,
            "",
            "## Cost",
            "",
            cost,
            "",
        ]
    )


def _plot(run: Run, file: Path) -> None:
    matplotlib = require("matplotlib", extra="plot", purpose="the plot of himga report")
    matplotlib.use("Agg")
    pyplot = require("matplotlib.pyplot", extra="plot", purpose="the plot of himga report")
    blocks = dict(run.metrics["by_category"])
    blocks["overall"] = run.metrics["overall"]
    metrics = [m for m in _PLOTTED if any(b.get(m) is not None for b in blocks.values())]
    figure, axis = pyplot.subplots(figsize=(1.4 * len(blocks) + 2, 3.2))
    width = 0.8 / max(len(metrics), 1)
    for k, metric in enumerate(metrics):
        xs = [g + (k - (len(metrics) - 1) / 2) * width for g in range(len(blocks))]
        heights = [b.get(metric) or 0.0 for b in blocks.values()]
        axis.bar(xs, heights, width, label=METRIC_TITLES[metric])
    axis.set_xticks(range(len(blocks)))
    axis.set_xticklabels(list(blocks), fontsize=8)
    axis.set_ylim(0, 1)
    axis.set_title(f"{run.label} on {run.manifest.get('dataset', {}).get('name')}", fontsize=10)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(file, dpi=120)
    pyplot.close(figure)

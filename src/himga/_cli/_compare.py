"""``himga compare RUN_A RUN_B [...]``: paired differences with bootstrap CIs and p-values."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from himga._cli._runs import METRIC_TITLES, Run, RunReadError, load_run
from himga._errors import HimgaError
from himga._extras import MissingExtraError, require
from himga.data.schema import Category
from himga.eval._aggregate import question_scores
from himga.eval._paired import DEFAULT_RESAMPLES, paired_differences

__all__ = ["CompareError", "compare_runs", "register", "run"]

OVERALL = "overall (no adversarial)"
OVERALL_ALL = "overall (all)"
_DEFAULT_METRICS = (
    "judge",
    "f1",
    "bleu1",
    "context_recall_any",
    "context_recall_all",
    "recall@5",
    "recall@10",
    "recall@25",
    "recall@50",
)


class CompareError(HimgaError, ValueError):
    """The runs cannot be compared (another dataset, other questions, unknown metric)."""


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
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run directories")
    parser.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="NAME",
        help="metric to compare, by key or column title (repeatable; default: every one "
        f"the runs have of {', '.join(METRIC_TITLES[m] for m in _DEFAULT_METRICS)})",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples and permutations (default {DEFAULT_RESAMPLES:,})",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--plot", type=Path, default=None, metavar="FILE", help="save a figure")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the comparison; 2 when the runs cannot be read or compared."""
    # The products are small (resamples x questions); OpenBLAS threads only fight
    # over the cores then (2.4x the CPU time measured on 2 cores). Before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if len(args.runs) < 2:
        print("himga compare: error: give at least two runs", file=sys.stderr)
        return 2
    if args.resamples < 1:
        print("himga compare: error: --resamples must be >= 1", file=sys.stderr)
        return 2
    try:
        runs = [load_run(path) for path in args.runs]
        comparison = compare_runs(
            runs, metrics=args.metric, resamples=args.resamples, seed=args.seed
        )
        if args.plot is not None:
            plot_comparison(comparison, args.plot)
    except (CompareError, RunReadError, MissingExtraError) as exc:
        print(f"himga compare: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(comparison, indent=2))
    else:
        print(format_comparison(comparison))
    return 0


def _resolve_metric(name: str) -> str:
    if name in METRIC_TITLES:
        return name
    by_title = {title.lower(): key for key, title in METRIC_TITLES.items()}
    if name.lower() in by_title:
        return by_title[name.lower()]
    known = ", ".join(METRIC_TITLES.values())
    raise CompareError(f"unknown metric {name!r} (known: {known}, or their keys)")


def _groups(run: Run) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for category in Category:
        members = [i for i, r in enumerate(run.results) if r.category is category]
        if members:
            groups[category.value] = members
    everything = list(range(len(run.results)))
    groups[OVERALL] = [i for i in everything if run.results[i].category is not Category.ADVERSARIAL]
    groups[OVERALL_ALL] = everything
    return groups


def _check_comparable(baseline: Run, other: Run) -> list[int]:
    """The row of each baseline question in ``other``; CompareError if they differ."""
    ours, theirs = baseline.manifest.get("dataset", {}), other.manifest.get("dataset", {})
    for field in ("name", "sha256"):
        if ours.get(field) != theirs.get(field):
            raise CompareError(
                f"{baseline.path} and {other.path} ran on different datasets "
                f"({field} {ours.get(field)!r} != {theirs.get(field)!r})"
            )
    position = {r.key: i for i, r in enumerate(other.results)}
    keys = [r.key for r in baseline.results]
    missing = [key for key in keys if key not in position]
    extra = len(position) - (len(keys) - len(missing))
    if missing or extra:
        example = (
            f"; e.g. {missing[0][0]} {missing[0][1]} only in {baseline.path}" if missing else ""
        )
        raise CompareError(
            f"{baseline.path} and {other.path} hold different question sets "
            f"({len(missing)} only in the first, {extra} only in the second{example}); "
            "compare runs of the same dataset and --limit"
        )
    return [position[key] for key in keys]


def _matrix(
    scores: Sequence[dict[str, float | None]], rows: Sequence[int], metrics: Sequence[str]
) -> list[list[float]]:
    return [[_value(scores[i][m]) for m in metrics] for i in rows]


def _value(score: float | None) -> float:
    return math.nan if score is None else float(score)


def compare_runs(
    runs: Sequence[Run],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The JSON-ready comparison of every run with ``runs[0]`` (module docstring)."""
    baseline = runs[0]
    aligned = [_check_comparable(baseline, other) for other in runs[1:]]
    scores = [
        [question_scores(r, j) for r, j in zip(run.results, run.judge, strict=True)] for run in runs
    ]
    if metrics:
        chosen = [_resolve_metric(name) for name in metrics]
    else:
        chosen = [
            m
            for m in _DEFAULT_METRICS
            if all(any(q[m] is not None for q in run_scores) for run_scores in scores)
        ]
    if not chosen:
        raise CompareError("the runs share no metric with values (--metric to choose one)")
    groups = _groups(baseline)
    rows: list[dict[str, Any]] = []
    for other, other_scores, positions in zip(runs[1:], scores[1:], aligned, strict=True):
        for index, (group, members) in enumerate(groups.items()):
            a = _matrix(scores[0], members, chosen)
            b = _matrix(other_scores, [positions[i] for i in members], chosen)
            # One stream per group, so adding a category leaves the others' numbers alone.
            found = paired_differences(a, b, resamples=resamples, seed=seed * 1_000 + index)
            for metric, difference in zip(chosen, found, strict=True):
                rows.append(
                    {
                        "run": str(other.path),
                        "group": group,
                        "metric": metric,
                        "n": difference.n,
                        "a": difference.mean_a,
                        "b": difference.mean_b,
                        "difference": difference.difference,
                        "ci": [difference.ci_low, difference.ci_high],
                        "p_value": difference.p_value,
                    }
                )
    return {
        "baseline": _describe(baseline),
        "runs": [_describe(other) for other in runs[1:]],
        "dataset": baseline.manifest.get("dataset", {}),
        "questions": len(baseline.results),
        "metrics": chosen,
        "resamples": resamples,
        "seed": seed,
        "confidence": 0.95,
        "method": (
            "difference = run - baseline over the questions both scored, paired by "
            "(sample_id, question_id); CI: percentile paired bootstrap; p: two-sided "
            "paired permutation (sign flips), (1 + extreme) / (1 + resamples)"
        ),
        "comparisons": rows,
    }


def _describe(run: Run) -> dict[str, Any]:
    memory = run.manifest.get("memory", {})
    return {
        "path": str(run.path),
        "label": run.label,
        "memory_repr": memory.get("repr"),
        "run_identity": run.manifest.get("run_identity"),
        "started_at": run.manifest.get("started_at"),
    }


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _p(value: float | None, resamples: int) -> str:
    if value is None:
        return "-"
    floor = 1 / (1 + resamples)
    return f"<{floor:.0e}".replace("e-0", "e-") if value <= floor else f"{value:.4f}"


def format_comparison(comparison: dict[str, Any]) -> str:
    """The comparison as markdown: one table per compared run and metric."""
    baseline = comparison["baseline"]
    dataset = comparison["dataset"]
    sha = str(dataset.get("sha256") or "")
    lines = [
        f"Baseline A: `{baseline['path']}` ({baseline['label']}, {baseline['memory_repr']})",
        "",
        f"Dataset {dataset.get('name')} (sha256 `{sha[:12]}…`), {comparison['questions']:,} "
        f"questions paired by id. Δ = B − A; 95% CI: paired bootstrap, "
        f"{comparison['resamples']:,} resamples, seed {comparison['seed']}; p: paired "
        f"permutation test, {comparison['resamples']:,} sign flips, two-sided.",
    ]
    for other in comparison["runs"]:
        for metric in comparison["metrics"]:
            title = METRIC_TITLES.get(metric, metric)
            lines += [
                "",
                f"### {title}: B = `{other['path']}` ({other['label']}) vs A",
                "",
                "| category | n | A | B | Δ | 95% CI | p |",
                "| --- | ---: | ---: | ---: | ---: | :---: | ---: |",
            ]
            for row in comparison["comparisons"]:
                if row["run"] != other["path"] or row["metric"] != metric:
                    continue
                low, high = row["ci"]
                interval = "-" if low is None else f"[{low:+.3f}, {high:+.3f}]"
                lines.append(
                    f"| {row['group']} | {row['n']} | {_number(row['a'])} | {_number(row['b'])} "
                    f"| {_number(row['difference'], signed=True)} | {interval} "
                    f"| {_p(row['p_value'], comparison['resamples'])} |"
                )
    return "\n".join(lines)


def plot_comparison(comparison: dict[str, Any], file: Path) -> None:
    """Per-category bars of each metric's difference, with CI whiskers, saved to ``file``."""
    matplotlib = require("matplotlib", extra="plot", purpose="himga compare --plot")
    matplotlib.use("Agg")
    pyplot = require("matplotlib.pyplot", extra="plot", purpose="himga compare --plot")
    metrics = comparison["metrics"]
    runs = comparison["runs"]
    groups = list(dict.fromkeys(row["group"] for row in comparison["comparisons"]))
    figure, axes = pyplot.subplots(
        len(metrics), 1, figsize=(1.3 * len(groups) + 2, 2.4 * len(metrics)), squeeze=False
    )
    width = 0.8 / len(runs)
    for axis, metric in zip(axes[:, 0], metrics, strict=True):
        for k, other in enumerate(runs):
            rows = {
                row["group"]: row
                for row in comparison["comparisons"]
                if row["run"] == other["path"] and row["metric"] == metric
            }
            xs, heights, below, above = [], [], [], []
            for g, group in enumerate(groups):
                row = rows.get(group)
                if row is None or row["difference"] is None:
                    continue
                xs.append(g + (k - (len(runs) - 1) / 2) * width)
                heights.append(row["difference"])
                below.append(row["difference"] - row["ci"][0])
                above.append(row["ci"][1] - row["difference"])
            axis.bar(xs, heights, width, yerr=[below, above], capsize=3, label=other["label"])
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_ylabel(f"Δ {METRIC_TITLES.get(metric, metric)}")
        axis.set_xticks(range(len(groups)))
        axis.set_xticklabels(groups, fontsize=8)
    axes[0, 0].set_title(
        f"run − {comparison['baseline']['label']} (95% paired bootstrap CI)", fontsize=10
    )
    axes[0, 0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(file, dpi=120)
    pyplot.close(figure)

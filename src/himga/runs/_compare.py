"""Paired comparison of runs: per-question differences with bootstrap CIs and p-values."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from himga._errors import HimgaError
from himga._extras import require
from himga.eval import (
    UnknownMetricError,
    get_metric,
    headline_title,
    question_scores,
    result_groups,
)
from himga.eval._metric_registry import MetricTitles
from himga.eval._paired import DEFAULT_RESAMPLES, paired_differences
from himga.metering import PHASES
from himga.runs._arms import ArmKind, arm_of, arm_split, format_arm_split
from himga.runs._files import save_figure
from himga.runs._judges import format_judges_comparison, judges_comparison
from himga.runs._leaderboard import Leaderboard, format_leaderboard, leaderboard
from himga.runs._per_correct import costs_per_correct, format_cost_per_correct
from himga.runs._rundir import Run

__all__ = [
    "DEFAULT_METRICS",
    "METRIC_TITLES",
    "CompareError",
    "Comparison",
    "PairedDifference",
    "arm_comparison",
    "compare_runs",
    "format_comparison",
    "format_p_value",
    "nan_if_none",
    "plot_comparison",
]

#: Short column titles of the metrics ``compare`` and ``report`` show, by metric key
#: (read when asked, so importing himga loads no benchmark plug-in).
METRIC_TITLES: Mapping[str, str] = MetricTitles()
OVERALL = "overall (no adversarial)"
OVERALL_ALL = "overall (all)"
#: What ``compare`` compares when no metric is named: each of these every run has values of.
DEFAULT_METRICS = (
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


def _resolve_metric(name: str) -> str:
    try:
        return get_metric(name).name
    except UnknownMetricError as exc:
        raise CompareError(f"unknown metric {name!r} ({exc})") from None


def _groups(run: Run) -> dict[str, list[int]]:
    groups = result_groups(run.results)
    groups[OVERALL] = groups.pop("overall")
    groups[OVERALL_ALL] = groups.pop("overall_with_adversarial")
    return groups


def _check_comparable(baseline: Run, other: Run) -> list[int]:
    """The row of each baseline question in ``other``; CompareError if they differ."""
    ours, theirs = baseline.manifest.dataset, other.manifest.dataset
    for field in ("name", "sha256"):
        if getattr(ours, field) != getattr(theirs, field):
            raise CompareError(
                f"{baseline.path} and {other.path} ran on different datasets "
                f"({field} {getattr(ours, field)!r} != {getattr(theirs, field)!r})"
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
    return [[nan_if_none(scores[i][m]) for m in metrics] for i in rows]


def nan_if_none(score: float | None) -> float:
    """A per-question score as a float, NaN for ``None`` (no value), as the statistics take it."""
    return math.nan if score is None else float(score)


#: How ``compare`` computes each difference, as the JSON says it.
METHOD = (
    "difference = run - baseline over the questions both scored, paired by "
    "(sample_id, question_id); CI: percentile paired bootstrap; p: two-sided "
    "paired permutation (sign flips), (1 + extreme) / (1 + resamples)"
)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """One run against the baseline on one ``metric`` over one ``group`` (a category, or
    overall): ``n`` questions both scored, the means ``a`` (baseline) and ``b`` (the run),
    ``difference`` = b - a with its 95% paired-bootstrap ``ci`` and permutation
    ``p_value`` (``None`` where undefined: no question, or no variation)."""

    run: str
    group: str
    metric: str
    n: int
    a: float | None
    b: float | None
    difference: float | None
    ci: tuple[float | None, float | None]
    p_value: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``himga compare --json`` prints it."""
        return {
            "run": self.run,
            "group": self.group,
            "metric": self.metric,
            "n": self.n,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci": list(self.ci),
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare_runs` found: the ``baseline`` and the other ``runs`` described
    (path, label, memory, identity, start, costs), ``warnings`` (judged differently), the
    ``dataset`` and its ``questions``, the ``metrics`` compared, the bootstrap's
    ``resamples`` and ``seed``, one :class:`PairedDifference` per run x group x metric,
    the :class:`~himga.runs.Leaderboard` by the first metric, the comparison under every
    judge (``judges``), the memory/reader split of the ``arms`` (``None`` when every run
    is of the memory arm) and the ``cost_per_correct`` of each run under each of its
    judges. :meth:`to_dict` is the JSON of ``himga compare --json``."""

    baseline: Mapping[str, Any]
    runs: tuple[Mapping[str, Any], ...]
    dataset: Mapping[str, Any]
    questions: int
    metrics: tuple[str, ...]
    resamples: int
    seed: int
    differences: tuple[PairedDifference, ...]
    leaderboard: Leaderboard
    warnings: tuple[str, ...] = ()
    judges: tuple[Mapping[str, Any], ...] = ()
    arms: Mapping[str, Any] | None = None
    cost_per_correct: tuple[Mapping[str, Any], ...] = ()
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "baseline": dict(self.baseline),
            "runs": [dict(run) for run in self.runs],
            "warnings": list(self.warnings),
            "dataset": dict(self.dataset),
            "questions": self.questions,
            "metrics": list(self.metrics),
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
            "method": METHOD,
            "comparisons": [row.to_dict() for row in self.differences],
            "leaderboard": self.leaderboard.to_dict(),
            "judges": [dict(judge) for judge in self.judges],
            "arms": None if self.arms is None else dict(self.arms),
            "cost_per_correct": [dict(cost) for cost in self.cost_per_correct],
        }


def compare_runs(
    runs: Sequence[Run],
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """The comparison of every run with ``runs[0]``: per group (each category, overall
    without and with adversarial questions) and metric (``metrics`` by key or column
    title; default: each of :data:`DEFAULT_METRICS` every run has values of), the mean
    difference over the questions both scored, paired by (sample, question) id, its
    paired bootstrap CI and permutation p-value (``resamples``, ``seed``); every run
    ranked by the first metric; the same under every judge, the arms' split and the cost
    per correct answer (:class:`Comparison`).
    :class:`CompareError` for runs on other datasets or question sets."""
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
            for m in DEFAULT_METRICS
            if all(any(q[m] is not None for q in run_scores) for run_scores in scores)
        ]
    if not chosen:
        raise CompareError("the runs share no metric with values (--metric to choose one)")
    groups = _groups(baseline)
    rows: list[PairedDifference] = []
    for other, other_scores, positions in zip(runs[1:], scores[1:], aligned, strict=True):
        for index, (group, members) in enumerate(groups.items()):
            a = _matrix(scores[0], members, chosen)
            b = _matrix(other_scores, [positions[i] for i in members], chosen)
            # One stream per group, so adding a category leaves the others' numbers alone.
            found = paired_differences(a, b, resamples=resamples, seed=seed * 1_000 + index)
            for metric, difference in zip(chosen, found, strict=True):
                rows.append(
                    PairedDifference(
                        run=str(other.path),
                        group=group,
                        metric=metric,
                        n=difference.n,
                        a=difference.mean_a,
                        b=difference.mean_b,
                        difference=difference.difference,
                        ci=(difference.ci_low, difference.ci_high),
                        p_value=difference.p_value,
                    )
                )
    return Comparison(
        baseline=_describe(baseline),
        runs=tuple(_describe(other) for other in runs[1:]),
        warnings=tuple(
            warning for other in runs[1:] if (warning := _judged_differently(baseline, other))
        ),
        dataset=baseline.manifest.dataset.to_dict(),
        questions=len(baseline.results),
        metrics=tuple(chosen),
        resamples=resamples,
        seed=seed,
        differences=tuple(rows),
        leaderboard=leaderboard(runs, chosen[0]),
        judges=tuple(judges_comparison(runs, aligned, resamples=resamples, seed=seed)),
        arms=arm_comparison(runs),
        cost_per_correct=tuple(c for run in runs for c in costs_per_correct(run)),
    )


#: What makes two judges the same judge (base URLs aside: one model served twice is one).
_JUDGE_FIELDS = ("provider", "model", "temperature", "prompt_hashes")


def _judge_name(run: Run) -> str:
    judge = run.manifest.judge or {}
    return f"{judge.get('provider')}/{judge.get('model')}"


def _judged_differently(baseline: Run, other: Run) -> str | None:
    """The warning when both runs were judged, by judges that differ (provider, model,
    temperature or prompts): their judge scores are not comparable then."""
    ours, theirs = baseline.manifest.judge, other.manifest.judge
    if ours is None or theirs is None:
        return None
    differing = [f for f in _JUDGE_FIELDS if ours.get(f) != theirs.get(f)]
    if not differing:
        return None
    return (
        f"judged differently: `{baseline.path}` by {_judge_name(baseline)}, `{other.path}` by "
        f"{_judge_name(other)} ({', '.join(differing)} differ); their judge scores are not "
        "comparable"
    )


def _describe(run: Run) -> dict[str, Any]:
    return {
        "path": str(run.path),
        "label": run.label,
        "memory_repr": run.manifest.memory.repr,
        "run_identity": run.manifest.run_identity,
        "started_at": run.manifest.started_at,
        "costs": None if run.manifest.costs is None else run.manifest.costs.to_dict(),
    }


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def format_p_value(value: float | None, resamples: int) -> str:
    """A permutation p-value as ``compare`` prints it: 4 decimals, or ``<1e-4`` at the floor
    ``1 / (1 + resamples)`` of a test with ``resamples`` permutations; ``-`` for ``None``."""
    if value is None:
        return "-"
    floor = 1 / (1 + resamples)
    return f"<{floor:.0e}".replace("e-0", "e-") if value <= floor else f"{value:.4f}"


def format_comparison(comparison: Comparison) -> str:
    """The comparison as markdown: the leaderboard, then one table per compared run and
    metric."""
    baseline = comparison.baseline
    dataset = comparison.dataset
    sha = str(dataset.get("sha256") or "")
    lines = [
        f"Baseline A: `{baseline['path']}` ({baseline['label']}, {baseline['memory_repr']})",
        "",
        f"Dataset {dataset.get('name')} (sha256 `{sha[:12]}…`), {comparison.questions:,} "
        f"questions paired by id. Δ = B − A; 95% CI: paired bootstrap, "
        f"{comparison.resamples:,} resamples, seed {comparison.seed}; p: paired "
        f"permutation test, {comparison.resamples:,} sign flips, two-sided.",
        *_costs_table([baseline, *comparison.runs]),
        "",
        format_leaderboard(comparison.leaderboard),
        *_arms_and_costs(comparison),
    ]
    for warning in comparison.warnings:
        lines[1:1] = ["", f"**Warning: {warning}.**"]
    for other in comparison.runs:
        for metric in comparison.metrics:
            title = METRIC_TITLES.get(metric, metric)
            lines += [
                "",
                f"### {title}: B = `{other['path']}` ({other['label']}) vs A",
                "",
                "| category | n | A | B | Δ | 95% CI | p |",
                "| --- | ---: | ---: | ---: | ---: | :---: | ---: |",
            ]
            for row in comparison.differences:
                if row.run != other["path"] or row.metric != metric:
                    continue
                low, high = row.ci
                interval = "-" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"
                lines.append(
                    f"| {row.group} | {row.n} | {_number(row.a)} | {_number(row.b)} "
                    f"| {_number(row.difference, signed=True)} | {interval} "
                    f"| {format_p_value(row.p_value, comparison.resamples)} |"
                )
    lines += format_judges_comparison(comparison.judges, comparison.resamples)
    return "\n".join(lines)


def arm_comparison(runs: Sequence[Run]) -> dict[str, Any] | None:
    """How much of each run's judge accuracy is memory and how much reader, when the runs
    (of one question set, ``CompareError`` otherwise) are not all of the memory arm and
    were judged: :func:`~himga.runs.arm_split` of their judge accuracy over the headline
    group, on the questions every run judged, with ``metric``, ``group`` and ``n``;
    ``None`` otherwise (all memory arms, or no question every run judged)."""
    for other in runs[1:]:
        _check_comparable(runs[0], other)
    arms: list[ArmKind] = [arm_of(run.manifest) for run in runs]
    if all(arm == "memory" for arm in arms):
        return None
    headline = {runs[0].results[i].key for i in result_groups(runs[0].results)["overall"]}
    scores = [_judge_scores(run, headline) for run in runs]
    common = set.intersection(*(set(found) for found in scores))
    if not common:
        return None
    accuracies: list[tuple[str, ArmKind, float]] = [
        (run.label, arm, sum(found[key] for key in common) / len(common))
        for run, arm, found in zip(runs, arms, scores, strict=True)
    ]
    return {
        "metric": "judge",
        "group": headline_title(runs[0].manifest.dataset.name),
        "n": len(common),
        **arm_split(accuracies),
    }


def _judge_scores(run: Run, keys: set[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """The judge score of each question of ``keys`` the run has one for."""
    found: dict[tuple[str, str], float] = {}
    for result, judge in zip(run.results, run.judge, strict=True):
        score = question_scores(result, judge, only=("judge",))["judge"]
        if result.key in keys and score is not None:
            found[result.key] = score
    return found


def _arms_and_costs(comparison: Comparison) -> list[str]:
    """The markdown of the comparison's arm split (when there is one) and cost per
    correct answer (when any run was judged), each after a blank line."""
    lines: list[str] = []
    split = comparison.arms
    if split is not None:
        title = METRIC_TITLES.get(split["metric"], split["metric"])
        lines += ["", *format_arm_split(split, metric=title, group=split["group"], n=split["n"])]
    costs = format_cost_per_correct(comparison.cost_per_correct)
    return lines + (["", *costs] if costs else [])


def _costs_table(described: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each run's model calls per phase (calls, tokens in + out), when any run counted any."""
    costs = [run.get("costs") for run in described]
    found = [p["phase"] for c in costs if c is not None for p in c["phases"]]
    phases = [p for p in PHASES if p in found]
    phases += [p for p in dict.fromkeys(found) if p not in PHASES]
    if not phases:
        return []
    lines = [
        "",
        "Model calls per phase (calls, tokens in + out; the manifests' `costs`):",
        "",
        "| run | " + " | ".join(phases) + " |",
        "| --- |" + " ---: |" * len(phases),
    ]
    for run, cost in zip(described, costs, strict=True):
        if cost is None:
            cells = ["not counted"] * len(phases)
        else:
            of = {p["phase"]: p for p in cost["phases"]}
            cells = [
                f"{of[phase]['calls']:,} ({of[phase]['input_tokens']:,} + "
                f"{of[phase]['output_tokens']:,})"
                if phase in of
                else "0"
                for phase in phases
            ]
        lines.append(f"| `{run['path']}` | " + " | ".join(cells) + " |")
    return lines


def plot_comparison(comparison: Comparison, file: Path) -> None:
    """Per-category bars of each metric's difference, with CI whiskers, saved to ``file``."""
    matplotlib = require("matplotlib", extra="plot", purpose="himga compare --plot")
    matplotlib.use("Agg")
    pyplot = require("matplotlib.pyplot", extra="plot", purpose="himga compare --plot")
    formats = pyplot.figure().canvas.get_supported_filetypes()
    pyplot.close("all")
    if file.suffix.lstrip(".").lower() not in formats:
        raise CompareError(
            f"--plot {file}: not a figure format matplotlib writes; end the name in "
            f"{', '.join('.' + name for name in sorted(formats))}"
        )
    metrics = comparison.metrics
    runs = comparison.runs
    groups = list(dict.fromkeys(row.group for row in comparison.differences))
    figure, axes = pyplot.subplots(
        len(metrics), 1, figsize=(1.3 * len(groups) + 2, 2.4 * len(metrics)), squeeze=False
    )
    width = 0.8 / len(runs)
    for axis, metric in zip(axes[:, 0], metrics, strict=True):
        for k, other in enumerate(runs):
            rows = {
                row.group: row
                for row in comparison.differences
                if row.run == other["path"] and row.metric == metric
            }
            xs: list[float] = []
            heights: list[float] = []
            below: list[float] = []
            above: list[float] = []
            for g, group in enumerate(groups):
                row = rows.get(group)
                if row is None or row.difference is None:
                    continue
                low, high = row.ci
                if low is None or high is None:
                    continue
                xs.append(g + (k - (len(runs) - 1) / 2) * width)
                heights.append(row.difference)
                below.append(row.difference - low)
                above.append(high - row.difference)
            axis.bar(xs, heights, width, yerr=[below, above], capsize=3, label=other["label"])
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_ylabel(f"Δ {METRIC_TITLES.get(metric, metric)}")
        axis.set_xticks(range(len(groups)))
        axis.set_xticklabels(groups, fontsize=8)
    axes[0, 0].set_title(
        f"run − {comparison.baseline['label']} (95% paired bootstrap CI)", fontsize=10
    )
    axes[0, 0].legend(fontsize=8)
    save_figure(pyplot, figure, file)

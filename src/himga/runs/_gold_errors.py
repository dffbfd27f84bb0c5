"""A run's judge accuracy beside its gold errors: raw, with the audited-wrong questions
excluded, and the ceiling (``himga report --errata``, ``himga compare --errata``).

Over the headline questions the judge scored (the categories of the ``overall`` block:
LoCoMo's adversarial left out): *raw* is their mean judge score; *excluding gold
errors* the mean over those whose id the errata do not name; the *ceiling* the share
of them whose gold is right -- what an answerer right on every question would score
against the gold (dial481/locomo-audit: 93.57% on LoCoMo-10's 1,540). Wilson 95%
intervals where every score is 0 or 1. A run that carries several judges (``himga
judge``) gets the three under each of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from himga.benchmarks._errata import Errata, ErrataError
from himga.benchmarks._registry import find_benchmark
from himga.eval._intervals import Proportion, wilson_interval
from himga.runs._load import PartialRun
from himga.runs._rundir import Run

__all__ = [
    "GoldErrorAccuracy",
    "format_gold_errors",
    "gold_error_accuracy",
    "gold_error_panel",
    "score_gold_errors",
]


@dataclass(frozen=True, slots=True)
class GoldErrorAccuracy:
    """One run against one errata file (module docstring): ``judged`` headline questions,
    ``audited_wrong`` of them named by the errata."""

    label: str
    judged: int
    audited_wrong: int
    raw: float | None
    raw_ci: Proportion | None
    excluding: float | None
    excluding_ci: Proportion | None
    ceiling: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""

        def interval(p: Proportion | None) -> list[float | None] | None:
            return None if p is None else [p.low, p.high]

        return {
            "label": self.label,
            "judged": self.judged,
            "audited_wrong": self.audited_wrong,
            "raw": self.raw,
            "raw_ci95": interval(self.raw_ci),
            "excluding_gold_errors": self.excluding,
            "excluding_gold_errors_ci95": interval(self.excluding_ci),
            "ceiling": self.ceiling,
        }


def _mean(scores: Sequence[float]) -> tuple[float | None, Proportion | None]:
    if not scores:
        return None, None
    binary = all(s in (0.0, 1.0) for s in scores)
    share = wilson_interval(int(sum(scores)), len(scores)) if binary else None
    return sum(scores) / len(scores), share


def score_gold_errors(label: str, scored: Sequence[tuple[bool, float]]) -> GoldErrorAccuracy:
    """The three accuracies (module docstring) of headline judge ``scored`` questions,
    each ``(named by the errata, score)``; NaN scores must be left out by the caller."""
    raw, raw_ci = _mean([score for _, score in scored])
    excluding, excluding_ci = _mean([score for wrong, score in scored if not wrong])
    wrong = sum(1 for named, _ in scored if named)
    return GoldErrorAccuracy(
        label=label,
        judged=len(scored),
        audited_wrong=wrong,
        raw=raw,
        raw_ci=raw_ci,
        excluding=excluding,
        excluding_ci=excluding_ci,
        ceiling=(len(scored) - wrong) / len(scored) if scored else None,
    )


def gold_error_accuracy(
    run: Run | PartialRun, errata: Errata, *, judge: str | None = None
) -> GoldErrorAccuracy:
    """The three accuracies of ``run`` under ``errata``, by the run's own judge or the
    judge id ``judge`` of :attr:`Run.judges` (its label then names the judge);
    :class:`ErrataError` when the errata audit another benchmark than the run's, or for
    a judge the run does not hold."""
    dataset = run.dataset_name
    if errata.dataset is not None and dataset.partition("+")[0] != errata.dataset:
        raise ErrataError(
            f"errata {errata.source} audit {errata.dataset!r}, the run {run.path} is on {dataset!r}"
        )
    scores = run.judge
    if judge is not None:
        held = run.judges if isinstance(run, Run) else {}
        if judge not in held:
            raise ErrataError(f"the run {run.path} holds no verdicts of judge {judge!r}")
        scores = list(held[judge])
    benchmark = find_benchmark(dataset)
    excluded = benchmark.headline_excludes if benchmark is not None else frozenset()
    scored = [
        (result.question_id in errata.entries, score)
        for result, score in zip(run.results, scores, strict=True)
        if result.category not in excluded and not math.isnan(score)
    ]
    label = run.label if judge is None else f"{run.label} · {judge}"
    return score_gold_errors(label, scored)


def gold_error_panel(run: Run | PartialRun, errata: Errata) -> list[GoldErrorAccuracy]:
    """:func:`gold_error_accuracy` under each of the run's judges (``himga judge`` adds
    them), or under its own judge alone when it has no other."""
    judges = list(run.judges) if isinstance(run, Run) else []
    if len(judges) < 2:
        return [gold_error_accuracy(run, errata)]
    return [gold_error_accuracy(run, errata, judge=judge) for judge in judges]


def _shown(value: float | None, interval: Proportion | None = None) -> str:
    if value is None:
        return "-"
    if interval is None or interval.low is None or interval.high is None:
        return f"{value:.1%}"
    return f"{value:.1%} [{interval.low:.1%}, {interval.high:.1%}]"


def format_gold_errors(rows: Sequence[GoldErrorAccuracy], errata: Errata) -> str:
    """A markdown section: one row per run, the three accuracies side by side."""
    lines = [
        "## Gold errors",
        "",
        f"Errata `{errata.source}` (sha256 `{errata.sha256[:16]}…`): "
        f"{len(errata.entries):,} questions whose gold is judged wrong. Judge accuracy over "
        "the headline questions judged; Wilson 95% intervals.",
        "",
        "| run | judged | audited wrong | raw | excluding gold errors | ceiling |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row.label} | {row.judged:,} | {row.audited_wrong:,} | "
            f"{_shown(row.raw, row.raw_ci)} | {_shown(row.excluding, row.excluding_ci)} | "
            f"{_shown(row.ceiling)} |"
        )
    return "\n".join(lines) + "\n"

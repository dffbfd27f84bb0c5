"""One line per run for ``himga runs``: what ran on what, how far it got, its headline number."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from himga.eval import get_metric
from himga.runs._load import PartialRun, RunStatus, run_status
from himga.runs._rundir import Run

__all__ = ["HEADLINE_METRICS", "RunSummary", "format_runs", "summarize_run"]

#: The headline metric of a run: the first of these its overall block has a value for
#: (the judge when judged, else the ranking, else the context, else the answers).
HEADLINE_METRICS = ("judge", "recall@10", "context_recall_any", "f1")


@dataclass(frozen=True)
class RunSummary:
    """A run at a glance: ``done`` of ``total`` questions (``total`` ``None`` when a partial
    run did not record it), the ``headline`` metric's title and overall value (``None``
    with no value), and ``date``, when it started (``""`` when unknown)."""

    path: Path
    benchmark: str
    memory: str
    status: RunStatus
    done: int
    total: int | None
    headline: tuple[str, float] | None
    date: str


def summarize_run(run: Run | PartialRun) -> RunSummary:
    """The :class:`RunSummary` of a run read by :func:`~himga.runs.load_run`."""
    overall = run.metrics.get("overall", {})
    headline = next(
        ((get_metric(name).title, overall[name]) for name in HEADLINE_METRICS
         if isinstance(overall.get(name), (int, float))),
        None,
    )  # fmt: skip
    if isinstance(run, PartialRun):
        total, date = run.planned, run.started_at or ""
    else:
        total, date = run.manifest.dataset.questions, run.manifest.started_at
    return RunSummary(
        path=run.path,
        benchmark=run.dataset_name,
        memory=run.label,
        status=run_status(run),
        done=len(run.results),
        total=total,
        headline=headline,
        date=date,
    )


def format_runs(summaries: list[RunSummary]) -> str:
    """The summaries as an aligned text table, one run a row."""
    table = [["run", "benchmark", "memory", "status", "questions", "headline", "started"]]
    for s in summaries:
        metric = "-" if s.headline is None else f"{s.headline[0]} {s.headline[1]:.3f}"
        total = "?" if s.total is None else f"{s.total:,}"
        table.append(
            [str(s.path), s.benchmark, s.memory, s.status, f"{s.done:,}/{total}", metric, s.date]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(line.rstrip() for line in lines)

"""``himga compare``'s leaderboard: one row per run, from its metrics.json and the
measurements (latency, context size) of its results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from himga.eval import (
    Metric,
    available_metrics,
    compute_measurements,
    format_cell,
    get_metric,
    headline_title,
    judge_interval,
    table_rows,
)
from himga.runs._arms import ARM_TITLES, ArmKind, arm_of
from himga.runs._rundir import Run

__all__ = ["Leaderboard", "LeaderboardRow", "format_leaderboard", "leaderboard"]


def _run_level() -> list[Metric]:
    """The columns every row has whatever metric is ranked: the table metrics measured
    rather than recorded (latency, context size), from the registry."""
    return [m for m in available_metrics().values() if not m.recorded and m.in_table]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class LeaderboardRow:
    """One run: where it is, its memory with arguments, its counts, the ranked metric
    per group (``None``: no value) and the run-level metrics over every question."""

    path: str
    label: str
    questions: int
    errors: int
    memory_errors: int
    by_group: Mapping[str, float | None]
    run_level: Mapping[str, float | None]
    #: The arm (:func:`~himga.runs.arm_of`): ``memory``, ``full``, ``llm-only``, ``oracle``.
    arm: str = "memory"
    #: The ranked metric's 95% interval ``[low, high]`` per group, where its blocks have
    #: one (the judge's Wilson interval, :func:`~himga.eval.judge_interval`).
    intervals: Mapping[str, list[float] | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` is its inverse."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LeaderboardRow:
        """The row :meth:`to_dict` gave."""
        return cls(
            path=str(data["path"]),
            label=str(data["label"]),
            questions=int(data["questions"]),
            errors=int(data["errors"]),
            memory_errors=int(data["memory_errors"]),
            by_group=dict(data["by_group"]),
            run_level=dict(data["run_level"]),
            arm=str(data.get("arm", "memory")),
            intervals=dict(data.get("intervals", {})),
        )


@dataclass(frozen=True)
class Leaderboard:
    """Runs ranked by ``metric`` (a metric key) over the headline group, best first
    (runs without a value last, in the order given); ``groups`` are the row titles of
    ``himga eval``'s table (:func:`~himga.eval.table_rows`), the headline last but one."""

    metric: str
    groups: tuple[str, ...]
    rows: tuple[LeaderboardRow, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` is its inverse."""
        return {**asdict(self), "groups": list(self.groups), "rows": [asdict(r) for r in self.rows]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Leaderboard:
        """The leaderboard :meth:`to_dict` gave."""
        return cls(
            metric=str(data["metric"]),
            groups=tuple(data["groups"]),
            rows=tuple(LeaderboardRow.from_dict(row) for row in data["rows"]),
        )


def _blocks(run: Run) -> dict[str, Mapping[str, Any]]:
    """Each row of the run's table, by title: its metrics.json block with the
    measurements of its results."""
    measured = compute_measurements(run.results)
    dataset = run.manifest.dataset.name
    return dict(table_rows(run.metrics, dataset=dataset, measurements=measured))


def leaderboard(runs: Sequence[Run], metric: str) -> Leaderboard:
    """The leaderboard of ``runs`` (of one dataset) by ``metric`` (a key), each value as
    the run's metrics.json has it (a run written before a metric existed: ``None``), or,
    for a measured metric, as its results give it."""
    headline = headline_title(runs[0].manifest.dataset.name)
    run_level = _run_level()
    rows = []
    groups: tuple[str, ...] = ()
    for run in runs:
        blocks = _blocks(run)
        groups = groups or tuple(blocks)  # one question set: the same rows in every run
        counts = run.metrics.get("counts", {})
        everything = list(blocks.values())[-1]  # the row of every question
        rows.append(
            LeaderboardRow(
                path=str(run.path),
                label=run.label,
                questions=int(counts.get("questions", len(run.results))),
                errors=int(counts.get("errors", 0)),
                memory_errors=int(counts.get("memory_errors", 0)),
                by_group={group: _number(block.get(metric)) for group, block in blocks.items()},
                run_level={m.name: _number(everything.get(m.name)) for m in run_level},
                arm=arm_of(run.manifest),
                intervals=_intervals(blocks, metric),
            )
        )
    sign = 1.0 if get_metric(metric).higher_is_better else -1.0

    def rank(row: LeaderboardRow) -> float:
        value = row.by_group.get(headline)
        return math.inf if value is None else -sign * value

    return Leaderboard(metric, groups, tuple(sorted(rows, key=rank)))


def format_leaderboard(board: Leaderboard) -> str:
    """The leaderboard as a markdown table, cells as in ``himga eval``'s table."""
    ranked = get_metric(board.metric)
    run_level = _run_level()
    header = ["run", "memory", "n", "errors", "mem-err", *board.groups]
    header += [m.title for m in run_level]
    lines = [
        f"### Leaderboard: {ranked.title} per category, best first by "
        f"{board.groups[-2]}; latency and context size over every question"
        + ("; [Wilson 95% interval]" if any(row.intervals for row in board.rows) else ""),
        "",
        "| " + " | ".join(header) + " |",
        "| --- | --- |" + " ---: |" * (len(header) - 2),
    ]
    for row in board.rows:
        cells = [f"`{row.path}`", _memory_cell(row), f"{row.questions:,}", str(row.errors)]
        cells.append(str(row.memory_errors))
        cells += [_value_cell(row, g, ranked.decimals) for g in board.groups]
        cells += [format_cell(row.run_level.get(m.name), m.decimals) for m in run_level]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _intervals(blocks: Mapping[str, Mapping[str, Any]], metric: str) -> dict[str, list[float]]:
    """The ranked metric's interval per group, where a block has one (the judge's)."""
    if metric != "judge":
        return {}
    intervals: dict[str, list[float]] = {}
    for group, block in blocks.items():
        bounds = judge_interval(block)
        if bounds is not None:
            intervals[group] = list(bounds)
    return intervals


def _memory_cell(row: LeaderboardRow) -> str:
    """The memory column: the label, and the arm's name for a run of another arm."""
    label = row.label or "-"
    if row.arm == "memory":
        return label
    return f"{ARM_TITLES.get(cast(ArmKind, row.arm), row.arm)}: {label}"


def _value_cell(row: LeaderboardRow, group: str, decimals: int) -> str:
    """The ranked metric of ``group``, with its 95% interval when it has one."""
    value = format_cell(row.by_group.get(group), decimals)
    interval = row.intervals.get(group)
    return value if interval is None else f"{value} {format_cell(interval, decimals)}"

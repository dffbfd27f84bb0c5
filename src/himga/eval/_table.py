"""``format_table``: the per-category table ``himga eval`` prints and ``himga report`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from himga.benchmarks._registry import find_benchmark
from himga.eval._aggregate import judge_interval
from himga.eval._metric_registry import available_metrics

__all__ = ["INTERVAL_TITLE", "format_cell", "format_table", "headline_title", "table_rows"]

#: The title of the judge's interval column (:func:`~himga.eval.judge_interval`).
INTERVAL_TITLE = "judge-95%"
# The interval's key in a row of the table (a block holds its two bounds apart).
_INTERVAL = "judge-95%"

_COUNTS = (("n", "questions"), ("mem-err", "memory_errors"), ("errors", "errors"))


def format_cell(value: Any, decimals: int = 3) -> str:
    """A table cell: ``-`` for ``None``, a float with ``decimals`` digits, an interval
    ``[low, high]`` (a pair of floats) as ``[0.350, 0.480]``, else ``str``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = value
        return f"[{format_cell(low, decimals)}, {format_cell(high, decimals)}]"
    return str(value)


def headline_title(dataset: str | None) -> str:
    """The row title of the ``"overall"`` block: ``"overall (no <excluded categories>)"``
    for a benchmark that leaves some out of the headline, else ``"overall"``; without a
    dataset, ``"overall (headline)"``."""
    if dataset is None:
        return "overall (headline)"
    benchmark = find_benchmark(dataset)
    if benchmark is None or not benchmark.headline_excludes:
        return "overall"
    excluded = [c for c in benchmark.categories if c in benchmark.headline_excludes]
    excluded += sorted(benchmark.headline_excludes.difference(excluded))
    return f"overall (no {', '.join(excluded)})"


def table_rows(
    metrics: Mapping[str, Any],
    *,
    dataset: str | None = None,
    measurements: Mapping[str, Any] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The rows of :func:`format_table`, titled: each category, the headline
    (:func:`headline_title`), ``"overall (all)"`` (every question); each the block of
    ``metrics`` with that of ``measurements`` (:func:`~himga.eval.compute_measurements`),
    if given."""
    extra = measurements or {}
    by_category = extra.get("by_category", {})
    rows = [
        (name, {**block, **by_category.get(name, {})})
        for name, block in metrics["by_category"].items()
    ]
    rows.append((headline_title(dataset), {**metrics["overall"], **extra.get("overall", {})}))
    everything = extra.get("overall_with_adversarial", {})
    rows.append(("overall (all)", {**metrics["overall_with_adversarial"], **everything}))
    return rows


def format_table(
    metrics: Mapping[str, Any],
    *,
    dataset: str | None = None,
    measurements: Mapping[str, Any] | None = None,
) -> str:
    """The per-category table of :func:`~himga.eval.compute_metrics` output, as text.

    The columns are the counts and every metric marked ``in_table`` (see
    :func:`~himga.eval.available_metrics`), titled by its ``title``. Columns without
    a value in any row (e.g. answer metrics of an offline run) are left out, and so
    is ``mem-err`` (questions a memory call failed on, excluded from the row's
    metrics) when no question failed. ``dataset`` titles the headline row (see
    :func:`headline_title`). ``measurements`` (:func:`~himga.eval.compute_measurements`
    of the same results) adds their columns: retrieval latency, context size.
    """
    metrics_by_name = available_metrics()
    columns = [
        *_COUNTS,
        *((m.title, name) for name, m in metrics_by_name.items() if m.in_table),
    ]
    rows = table_rows(metrics, dataset=dataset, measurements=measurements)
    shown = [
        (title, key)
        for title, key in columns
        if key in ("questions", "errors")
        or (key == "memory_errors" and any(block.get(key) for _, block in rows))
        or (key != "memory_errors" and any(block.get(key) is not None for _, block in rows))
    ]
    rows = [(name, {**block, _INTERVAL: judge_interval(block)}) for name, block in rows]
    shown = _with_interval(shown, rows)
    digits = {name: metric.decimals for name, metric in metrics_by_name.items()}
    table = [["category", *(title for title, _ in shown)]]
    table += [
        [name, *(format_cell(block.get(key), digits.get(key, 3)) for _, key in shown)]
        for name, block in rows
    ]
    return _aligned(table)


def _with_interval(
    shown: list[tuple[str, str]], rows: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, str]]:
    """``shown`` with the judge's Wilson 95% interval right after the judge column, when a
    row has one (none for partial-credit verdicts: see :func:`~himga.eval.judge_interval`)."""
    keys = [key for _, key in shown]
    if "judge" not in keys or all(block[_INTERVAL] is None for _, block in rows):
        return shown
    at = keys.index("judge") + 1
    return [*shown[:at], (INTERVAL_TITLE, _INTERVAL), *shown[at:]]


def _aligned(table: list[list[str]]) -> str:
    """Rows of cells as aligned text: the first column left-aligned, the others
    right-aligned, a rule under the first row (the header)."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in table
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)

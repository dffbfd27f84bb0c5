"""``format_table``: the per-category table ``himga eval`` prints and ``himga report`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from himga.benchmarks._registry import find_benchmark
from himga.eval._metric_registry import available_metrics

__all__ = ["format_table", "headline_title"]

_COUNTS = (("n", "questions"), ("mem-err", "memory_errors"), ("errors", "errors"))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
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


def format_table(metrics: Mapping[str, Any], *, dataset: str | None = None) -> str:
    """The per-category table of :func:`~himga.eval.compute_metrics` output, as text.

    The columns are the counts and every metric marked ``in_table`` (see
    :func:`~himga.eval.available_metrics`), titled by its ``title``. Columns without
    a value in any row (e.g. answer metrics of an offline run) are left out, and so
    is ``mem-err`` (questions a memory call failed on, excluded from the row's
    metrics) when no question failed. ``dataset`` titles the headline row (see
    :func:`headline_title`).
    """
    columns = [
        *_COUNTS,
        *((m.title, name) for name, m in available_metrics().items() if m.in_table),
    ]
    rows: list[tuple[str, Mapping[str, Any]]] = [
        (name, block) for name, block in metrics["by_category"].items()
    ]
    rows.append((headline_title(dataset), metrics["overall"]))
    rows.append(("overall (all)", metrics["overall_with_adversarial"]))
    shown = [
        (title, key)
        for title, key in columns
        if key in ("questions", "errors")
        or (key == "memory_errors" and any(block.get(key) for _, block in rows))
        or (key != "memory_errors" and any(block.get(key) is not None for _, block in rows))
    ]
    table = [["category", *(title for title, _ in shown)]]
    table += [[name, *(_cell(block.get(key)) for _, key in shown)] for name, block in rows]
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

"""Cost per correct answer: a run's model calls (the manifest's ``costs``) over its
judged-correct answers, with what was not counted said, never taken as free."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from himga.runs._rundir import Run

__all__ = ["cost_per_correct", "format_cost_per_correct"]


def cost_per_correct(run: Run) -> dict[str, Any]:
    """What the run spent per judged-correct answer, JSON-ready.

    ``correct`` is the sum of the judge scores of the answered questions without a memory
    or LLM error (for a 0/1 verdict, the number judged correct; BEAM's rubric gives partial
    credit, summed as it is averaged); ``judged`` how many were judged. From the
    manifest's ``costs``, summed over every phase (the memory's ``preflight``, ``ingest``
    and ``retrieval`` calls, ``answering``, ``judging``): ``calls``, ``input_tokens``,
    ``output_tokens``, the summed round-trip ``seconds``, each also ``per_correct``
    (``None`` without a correct answer); the run's ``wall_time_s`` (every invocation's,
    a resumed run's earlier ones from its ``history``) likewise. ``dollars``
    is always ``None``: himga records no price for any model, and a local model has none.
    ``unknown`` lists, one sentence each, what the numbers leave out: everything when the
    run counted no calls (``costs`` ``None``: tokens are then ``None``), the memory's own
    calls when it declared no endpoint, the tokens of calls whose response reported no
    usage.
    """
    judged = [
        score
        for result, score in zip(run.results, run.judge, strict=True)
        if not math.isnan(score)
        and result.error is None
        and result.memory_error is None
        and result.prediction is not None
    ]
    correct = float(sum(judged))
    costs = run.manifest.costs
    unknown: list[str] = []
    totals: dict[str, float | None]
    if costs is None:
        unknown.append("model calls were not counted (a run from before himga counted them)")
        totals = dict.fromkeys(("calls", "input_tokens", "output_tokens", "seconds"))
    else:
        phases = costs.phases.phases
        totals = {
            "calls": sum(p.calls for p in phases),
            "input_tokens": sum(p.input_tokens for p in phases),
            "output_tokens": sum(p.output_tokens for p in phases),
            "seconds": sum(p.seconds for p in phases),
        }
        if not costs.memory_endpoints and run.manifest.memory.spec not in ("null", "full"):
            unknown.append(
                "the memory's own model calls, if any (it declared no endpoint: not seen)"
            )
        unknown += [
            f"the tokens of {p.unmetered:,} {p.phase} calls whose response reported no usage"
            for p in phases
            if p.unmetered
        ]
    # A resumed run's earlier invocations spent wall time too (their manifests in history).
    earlier = [record.get("wall_time_s") for record in run.manifest.history]
    totals["wall_time_s"] = run.manifest.wall_time_s + sum(
        float(t) for t in earlier if isinstance(t, (int, float))
    )
    return {
        "path": str(run.path),
        "label": run.label,
        "correct": correct,
        "judged": len(judged),
        **totals,
        "per_correct": {
            name: None if value is None or correct <= 0 else value / correct
            for name, value in totals.items()
        },
        "dollars": None,
        "unknown": unknown,
    }


def _number(value: float | None, decimals: int = 0) -> str:
    return "-" if value is None else f"{value:,.{decimals}f}"


def _count(value: float) -> str:
    """A count of correct answers: whole for 0/1 verdicts, one decimal for partial credit."""
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.1f}"


def format_cost_per_correct(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The markdown lines of :func:`cost_per_correct` of one or more runs: a table, then
    what each run's numbers leave out. Empty when no run was judged."""
    if not any(entry["judged"] for entry in entries):
        return []
    lines = [
        "### Cost per correct answer",
        "",
        "| run | correct / judged | calls | tokens in + out | tokens per correct "
        "| model s per correct | wall s per correct |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for entry in entries:
        per = entry["per_correct"]
        tokens = (
            None
            if entry["input_tokens"] is None
            else entry["input_tokens"] + entry["output_tokens"]
        )
        per_tokens = (
            None if per["input_tokens"] is None else per["input_tokens"] + per["output_tokens"]
        )
        tokens_cell = (
            "-"
            if tokens is None
            else f"{entry['input_tokens']:,} + {entry['output_tokens']:,} = {tokens:,}"
        )
        lines.append(
            f"| `{entry['path']}` | {_count(entry['correct'])} / {entry['judged']:,} "
            f"| {_number(entry['calls'])} | {tokens_cell} | {_number(per_tokens)} "
            f"| {_number(per['seconds'], 2)} | {_number(per['wall_time_s'], 2)} |"
        )
    lines += [
        "",
        "Every phase counts: the memory's own calls (pre-flight, ingest, retrieval), "
        "answering and judging, summed over every part of the run (the manifest's "
        "`costs`); model seconds are summed round trips, wall seconds the run's. No dollar "
        "figure: himga records no price for any model (a local model has none: tokens and "
        "time are its cost).",
    ]
    for entry in entries:
        if entry["unknown"]:
            lines.append(f"Not counted for `{entry['path']}`: {'; '.join(entry['unknown'])}.")
        if entry["judged"] and entry["correct"] <= 0:
            lines.append(f"`{entry['path']}` has no correct answer: no cost per correct one.")
    return lines

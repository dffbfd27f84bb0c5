"""Cost per correct answer: a run's model calls (the manifest's ``costs``) over its
judged-correct answers, with what was not counted said, never taken as free."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from himga.runs._rundir import Run

__all__ = ["cost_per_correct", "costs_per_correct", "format_cost_per_correct"]


def cost_per_correct(run: Run, judge: str | None = None) -> dict[str, Any]:
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

    ``judge`` (a key of ``run.judges``) prices the answers under that judge: its verdicts
    count the correct answers and its own calls stand for the judging (the ``judging``
    phase for the eval's own judge; for one ``himga judge`` added, the ``costs`` of its
    manifest entry, summed over the invocations that finished), the other phases as
    above. Default (``None``): the eval's own verdicts (``run.judge``) and every phase.
    ``judge`` holds the id (``None`` for the default).
    """
    entry = _judge_entry(run, judge)
    scores = run.judge if judge is None else run.judges[judge]
    judged = [
        score
        for result, score in zip(run.results, scores, strict=True)
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
        own = entry is None or entry.get("scores") == "results"
        phases = [p for p in costs.phases.phases if own or p.phase != "judging"]
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
        if not own and entry is not None:
            unknown += _add_judge_costs(totals, entry)
    # A resumed run's earlier invocations spent wall time too (their manifests in history).
    earlier = [record.get("wall_time_s") for record in run.manifest.history]
    totals["wall_time_s"] = run.manifest.wall_time_s + sum(
        float(t) for t in earlier if isinstance(t, (int, float))
    )
    return {
        "path": str(run.path),
        "label": run.label,
        "judge": judge,
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


def costs_per_correct(run: Run) -> list[dict[str, Any]]:
    """:func:`cost_per_correct` of the run under each of its judges (``run.judges``, in
    order), or under its own verdicts alone when it lists none."""
    return [cost_per_correct(run, judge) for judge in run.judges] or [cost_per_correct(run)]


def _judge_entry(run: Run, judge: str | None) -> Mapping[str, Any] | None:
    """The manifest's entry of ``judge`` (``None`` for the default), checked to be one
    of the run's judges."""
    if judge is None:
        return None
    if judge not in run.judges:
        known = ", ".join(run.judges) or "none"
        raise KeyError(f"{run.path} has no judge {judge!r} (its judges: {known})")
    return next((e for e in run.manifest.judge_entries() if e.get("id") == judge), None)


def _add_judge_costs(totals: dict[str, float | None], entry: Mapping[str, Any]) -> list[str]:
    """Add the calls ``himga judge`` recorded in a judge's manifest entry to ``totals``;
    what they leave out, one sentence each."""
    costs = entry.get("costs")
    if not isinstance(costs, Mapping):
        return [f"the calls of judge {entry.get('id')} (its manifest entry counted none)"]
    for name in ("calls", "input_tokens", "output_tokens", "seconds"):
        value = totals[name]
        totals[name] = None if value is None else value + (costs.get(name) or 0)
    unmetered = int(costs.get("unmetered_calls") or 0)
    return (
        [f"the tokens of {unmetered:,} calls of judge {entry.get('id')} that reported no usage"]
        if unmetered
        else []
    )


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
        "| run | judge | correct / judged | calls | tokens in + out | tokens per correct "
        "| model s per correct | wall s per correct |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
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
            f"| `{entry['path']}` | {_judge(entry.get('judge'))} "
            f"| {_count(entry['correct'])} / {entry['judged']:,} "
            f"| {_number(entry['calls'])} | {tokens_cell} | {_number(per_tokens)} "
            f"| {_number(per['seconds'], 2)} | {_number(per['wall_time_s'], 2)} |"
        )
    lines += [
        "",
        "Every phase counts: the memory's own calls (pre-flight, ingest, retrieval), "
        "answering and the row's judge, summed over every part of the run (the manifest's "
        "`costs`; a judge `himga judge` added: its own calls, from its manifest entry); "
        "model seconds are summed round trips, wall seconds the run's (answering and the "
        "eval's own judging). No dollar "
        "figure: himga records no price for any model (a local model has none: tokens and "
        "time are its cost).",
    ]
    for entry in entries:
        where = f"`{entry['path']}`" + (
            f" under {_judge(entry['judge'])}" if entry.get("judge") else ""
        )
        if entry["unknown"]:
            lines.append(f"Not counted for {where}: {'; '.join(entry['unknown'])}.")
        if entry["judged"] and entry["correct"] <= 0:
            lines.append(f"{where} has no correct answer: no cost per correct one.")
    return lines


def _judge(judge: str | None) -> str:
    return "its own" if judge is None else f"`{judge}`"

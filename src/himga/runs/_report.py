"""``himga report``'s content: a run's table, its manifest in prose, and a plot."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from himga._extras import require
from himga.eval import INTERVAL_TITLE, judge_interval
from himga.runs._arms import ARM_TITLES, arm_of
from himga.runs._compare import METRIC_TITLES
from himga.runs._files import save_figure
from himga.runs._load import PartialRun
from himga.runs._manifest import CostsInfo
from himga.runs._per_correct import costs_per_correct, format_cost_per_correct
from himga.runs._rundir import Run

__all__ = ["plot_report", "render_report"]

_PLOTTED = ("judge", "f1", "context_recall_any", "recall@10")


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def render_report(
    run: Run | PartialRun, table: str, figure: str, *, sections: Sequence[str] = ()
) -> str:
    """The report's markdown: ``table`` is the per-category table of the run's metrics,
    ``figure`` the plot's markdown (or why there is none); ``sections``, markdown blocks
    appended at the end (the arms of other runs, published claims). A :class:`PartialRun`
    is reported as such: its title says partial, and what is known without a manifest."""
    if isinstance(run, PartialRun):
        return _render_partial(run, table, figure)
    manifest = run.manifest.to_dict()
    what = _what_was_run(run, manifest)
    on_what = _on_what(manifest)
    when = _when(run, manifest)
    cost = _cost(run, manifest["tokens"])
    return "\n".join(
        [
            f"# himga run report: `{run.label}` on `{manifest['dataset'].get('name')}`",
            "",
            f"Run directory `{run.path}`.",
            "",
            "## Results",
            "",
            "```text",
            table,
            "```",
            "",
            _outcome(run.metrics.get("counts", {})),
            *_judge_note(run.metrics),
            "",
            figure,
            "",
            "## What was run",
            "",
            what,
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
            *(line for section in sections for line in (section, "")),
        ]
    )


def _what_was_run(run: Run, manifest: Mapping[str, Any]) -> str:
    """The "What was run" paragraph: the arm, the memory, the answering and judging
    models, and the pre-flight."""
    what = [*_arm_sentence(run), _memory_sentence(manifest["memory"])]
    what += _model_sentences(manifest["llm"], manifest["judge"])
    preflight = manifest.get("preflight")
    if preflight is None:
        what.append("Pre-flight was skipped (`--no-preflight`).")
    else:
        what.append(
            f"Pre-flight passed {', '.join(preflight.get('checked', []))} in "
            f"{preflight.get('seconds')} s"
            + (f" ({preflight['limited']})." if preflight.get("limited") else ".")
        )
    return " ".join(what)


def _memory_sentence(memory: Mapping[str, Any]) -> str:
    """The memory as the manifest records it: spec, target, arguments, class, repr and
    where its code comes from."""
    arguments = memory.get("arguments") or {}
    given = ", ".join(f"`{k}={v!r}`" for k, v in arguments.items()) or "no arguments"
    provider = (
        f"distribution {memory['distribution']} {memory.get('version')}"
        if memory.get("distribution")
        else "no installed distribution (a local module)"
    )
    return (
        f"Memory `{memory.get('spec')}` (`{memory.get('target', memory.get('class'))}`, "
        f"{given}), an instance of `{memory.get('class')}` whose repr is "
        f"`{memory.get('repr')}`, provided by {provider}; its source "
        f"({_count(memory.get('source_files'))} files) hashes to "
        f"`{str(memory.get('source_sha256'))[:16]}…`."
    )


def _model_sentences(llm: Mapping[str, Any] | None, judge: Mapping[str, Any] | None) -> list[str]:
    """Who answered and who judged (or that nothing was answered, or nothing judged)."""
    if llm is None:
        return ["No LLM: the run measured retrieval only (nothing was answered or judged)."]
    answered = (
        f"Answers by {llm.get('provider')} model `{llm.get('model')}` "
        f"(temperature {llm.get('temperature')}, {llm.get('max_concurrency')} calls in "
        f"flight, base URL {llm.get('base_url')})."
    )
    if judge is None:
        return [answered, "The answers were not judged."]
    return [
        answered,
        f"Judged by {judge.get('provider')} model `{judge.get('model')}` "
        f"({judge.get('errors')} judge errors).",
    ]


def _on_what(manifest: Mapping[str, Any]) -> str:
    """The "On what" paragraph: the dataset, its checksum and size, and the question subset."""
    dataset = manifest["dataset"]
    on_what = (
        f"Dataset `{dataset.get('name')}` at `{dataset.get('path')}` (sha256 "
        f"`{dataset.get('sha256')}`): {_count(dataset.get('samples'))} samples, "
        f"{_count(dataset.get('questions'))} questions"
        + (f" (`--limit {dataset['limit']}`)." if dataset.get("limit") else ".")
    )
    subset = manifest.get("questions")
    if isinstance(subset, dict):
        on_what += (
            f" Only the {_count(subset.get('ids'))} questions of `{subset.get('file')}` "
            f"(`--questions`; id set sha256 `{str(subset.get('sha256'))[:16]}…`)."
        )
    return on_what


def _when(run: Run, manifest: Mapping[str, Any]) -> str:
    """The "When" paragraph: this invocation's times, versions and identity, then each
    invocation before it that the manifest's ``history`` keeps."""
    when = (
        f"Started {manifest.get('started_at')}, finished {manifest.get('finished_at')} "
        f"({manifest.get('wall_time_s')} s wall) with himga {manifest.get('himga_version')} "
        f"on Python {manifest.get('python')} ({manifest.get('platform')}); "
        f"{_count(manifest.get('resumed', 0))} results resumed from a checkpoint. "
        f"Run identity `{manifest.get('run_identity')}`."
    )
    for number, earlier in enumerate(run.manifest.history, start=1):
        when += (
            f" Invocation {number} before it (its manifest is kept in `history`): started "
            f"{earlier.get('started_at')}, finished {earlier.get('finished_at')} "
            f"({earlier.get('wall_time_s')} s wall), {_count(earlier.get('resumed', 0))} "
            "results resumed."
        )
    return when


def _cost(run: Run, tokens: Mapping[str, Any]) -> str:
    """The "Cost" section: the answer tokens, the client's own count, the calls per phase
    and the cost per correct answer."""
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
    cost += "\n\n" + _phase_costs(run.manifest.costs)
    per_correct = format_cost_per_correct(costs_per_correct(run))
    if per_correct:
        cost += "\n\n" + "\n".join(per_correct)
    return cost


def _outcome(counts: Mapping[str, Any]) -> str:
    """The counts under the table: questions, memory errors, answered, LLM errors, judged."""
    return (
        f"{_count(counts.get('questions'))} questions: {_count(counts.get('memory_errors', 0))} "
        f"memory errors (excluded from the metrics), {_count(counts.get('answered'))} answered, "
        f"{_count(counts.get('errors'))} LLM errors, {_count(counts.get('judged'))} judged."
    )


def _arm_sentence(run: Run) -> list[str]:
    """The sentence naming the run's arm, for a run not of the memory arm."""
    arm = arm_of(run.manifest)
    meaning = {
        "oracle": "its context was only each question's gold evidence turns, what the "
        "reader answers given perfect memory",
        "full": "its context was the whole history, as far as the context window allows",
        "llm-only": "it had no context: what the reader knows or guesses without memory",
    }
    if arm == "memory":
        return []
    return [f"This run is the **{ARM_TITLES[arm]}** arm: {meaning[arm]}."]


def _judge_note(metrics: Mapping[str, Any]) -> list[str]:
    """What the judge's interval column means, or why it has none."""
    overall = metrics.get("overall", {})
    if overall.get("judge") is None:
        return []
    if judge_interval(overall) is not None:
        return [
            "",
            f"`{INTERVAL_TITLE}`: the Wilson 95% interval of the judge accuracy (one "
            "0/1 verdict per question), per row.",
        ]
    return [
        "",
        "The judge gave partial credit (a rubric's 0.5): its mean is a score, not a share "
        "of correct answers, so no Wilson interval is shown; `himga compare`'s paired "
        "bootstrap interval covers differences of it.",
    ]


def _render_partial(run: PartialRun, table: str, figure: str) -> str:
    identity = run.identity
    dataset = run.dataset_name
    total = "an unrecorded number of" if run.planned is None else f"{run.planned:,}"
    started = run.started_at or "at an unrecorded time"
    answer = identity.get("answer")
    judge = identity.get("judge")
    judged = sum(1 for score in run.judge if not math.isnan(score))
    # stopped while judging: the verdicts it got are scored (himga.runs.load_run)
    verdicts = f"{judged:,} questions judged so far" if judged else "no verdict yet"
    what = [
        f"Memory `{run.label}` (`{identity.get('memory_class')}`, source hash "
        f"`{str(identity.get('memory_source_sha256'))[:16]}…`) on dataset `{dataset}` "
        f"(sha256 `{identity.get('dataset_sha256')}`).",
        "No LLM: retrieval only."
        if not answer
        else f"Answers by {answer.get('provider')} model `{answer.get('model')}`"
        + ("." if not judge else f", judged by `{judge.get('model')}` ({verdicts})."),
    ]
    return "\n".join(
        [
            f"# himga run report (partial): `{run.label}` on `{dataset}`",
            "",
            f"Run directory `{run.path}`. **Partial**: {len(run.results):,} of {total} "
            "questions finished, read from `checkpoint.jsonl`; the run has no manifest yet "
            "(it is under way, or was stopped: `himga eval --out "
            f"{run.path} --resume` finishes it). Started {started}.",
            "",
            "## Results so far",
            "",
            "```text",
            table,
            "```",
            "",
            figure,
            "",
            "## What is being run",
            "",
            " ".join(what),
            "",
        ]
    )


def _phase_costs(costs: CostsInfo | None) -> str:
    """The manifest's ``costs`` as a sentence on what was counted and a table per phase."""
    if costs is None:
        return (
            "Model calls per phase were not counted (a run from before himga counted "
            "them, or on Ray workers before it counted theirs)."
        )
    if costs.memory_endpoints:
        memory = (
            f"The memory's own model calls went to {', '.join(costs.memory_endpoints)} "
            "through a loopback recording proxy."
        )
    else:
        memory = (
            "The memory declared no model endpoint (not an `EndpointUser`, nor an "
            "`LLMUser` given the run's LLM): calls of its own, if any, were not seen."
        )
    if costs.judge_endpoint is not None:
        memory += (
            f" Answers went to {costs.answer_endpoint} and verdicts to the judge apart at "
            f"{costs.judge_endpoint}, counted the same way."
        )
    elif costs.answer_endpoint is not None:
        memory += f" Answers and verdicts went to {costs.answer_endpoint}, counted the same way."
    if not costs.phases.phases:
        return f"{memory} No model call was made."
    rows = [
        "| phase | calls | errors | tokens in | tokens out | no usage | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows += [
        f"| {c.phase} | {c.calls:,} | {c.errors:,} | {c.input_tokens:,} | "
        f"{c.output_tokens:,} | {c.unmetered:,} | {c.seconds:.2f} |"
        for c in costs.phases.phases
    ]
    summed = (
        "Model calls per phase, counted at the wire and summed over every part of the "
        "run (`calls.jsonl`; seconds are summed round trips, not wall time):"
    )
    per_model = [
        "| phase | model | calls | tokens in | tokens out |",
        "| --- | --- | ---: | ---: | ---: |",
        *(
            f"| {c.phase} | {c.model or 'not named'} | {c.calls:,} | {c.input_tokens:,} | "
            f"{c.output_tokens:,} |"
            for c in costs.phases.models
        ),
    ]
    by_model = ["", "The same calls per model (the model each request named):", "", *per_model]
    return "\n".join([memory, "", summed, "", *rows, *(by_model if costs.phases.models else [])])


def plot_report(run: Run | PartialRun, file: Path) -> None:
    """The per-category bars of a run's main metrics, saved to ``file`` (needs the plot extra)."""
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
    axis.set_title(f"{run.label} on {run.dataset_name}", fontsize=10)
    axis.legend(fontsize=8)
    save_figure(pyplot, figure, file)

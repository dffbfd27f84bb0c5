"""Aggregation of evaluation results into the numbers a paper table reports."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from himga.benchmarks._registry import find_benchmark
from himga.eval._intervals import binary_interval
from himga.eval._metric_registry import NEEDS, context_containment, metrics_of, run_metrics_of
from himga.eval.judge import JudgeScores
from himga.scoring._metric import Metric, MetricNeed, RunMetric
from himga.scoring._result import EvalResult

__all__ = [
    "JUDGE_INTERVAL",
    "compute_measurements",
    "compute_metrics",
    "judge_interval",
    "question_scores",
    "result_groups",
]


def _answered(result: EvalResult) -> bool:
    return result.prediction is not None and result.error is None


def _has(need: MetricNeed, result: EvalResult, judge: float | None) -> bool:
    """Whether ``result`` has what ``need`` asks (its memory did not fail)."""
    if need == "prediction":
        return _answered(result)
    if need == "judge":
        return _answered(result) and judge is not None
    if need == "context":
        return context_containment(result) is not None
    if need == "retrieval":
        return True
    return result.ranked_turn_ids is not None and bool(result.evidence_turns)


def _metrics(datasets: Iterable[str]) -> dict[str, dict[str, Metric]]:
    """The metrics of each dataset, by name."""
    return {dataset: {m.name: m for m in metrics_of(dataset)} for dataset in set(datasets)}


def _columns(catalogue: Mapping[str, Mapping[str, Metric]]) -> dict[str, Metric]:
    """Every metric name of ``catalogue`` (first definition), in registry order."""
    columns: dict[str, Metric] = {}
    for metrics in catalogue.values():
        for name, metric in metrics.items():
            columns.setdefault(name, metric)
    return columns


def _judge_value(judge: float | None) -> float | None:
    return None if judge is None or math.isnan(judge) else float(judge)


def question_scores(
    result: EvalResult, judge: float | None = None, *, only: Collection[str] | None = None
) -> dict[str, float | None]:
    """Every metric of the result's benchmark (see :func:`~himga.eval.metrics_of`) for one
    question, ``None`` where it does not apply; a block's value of
    :func:`compute_metrics` aggregates its questions' non-``None`` values. ``only``: the
    names of the metrics to score, the others left out (a viewer's one column of 10,000
    questions need not pay for twenty).

    A metric is scored only when the question has what it needs (an answer and no
    LLM error; a judge score; an evidence text; a ranking and evidence). A result
    with a ``memory_error`` has no score at all.
    """
    metrics = [m for m in metrics_of(result.dataset) if only is None or m.name in only]
    scores: dict[str, float | None] = {metric.name: None for metric in metrics}
    if result.memory_error is not None:
        return scores
    value = _judge_value(judge)
    for metric in metrics:
        if _has(metric.needs, result, value):
            scores[metric.name] = metric.score(result, value)
    return scores


def _block(
    results: Sequence[EvalResult],
    judge: Mapping[int, float],
    catalogue: Mapping[str, Mapping[str, Metric]],
) -> dict[str, Any]:
    """The metrics of one group; ``judge`` maps positions *within the group* to scores."""
    columns = _columns({r.dataset: catalogue[r.dataset] for r in results} or catalogue)
    block: dict[str, Any] = {}
    for need, count in NEEDS.items():
        having = [i for i, r in enumerate(results) if _has(need, r, judge.get(i))]
        block[count] = len(having)
        if need == "prediction":
            block["errors"] = sum(r.error is not None for r in results)
        for name, column in columns.items():
            if column.needs != need or not column.recorded:
                continue
            values = []
            for i in having:
                metric = catalogue[results[i].dataset].get(name)
                value = None if metric is None else metric.score(results[i], judge.get(i))
                if value is not None:
                    values.append(value)
            block[name] = column.aggregate(values)
    return block


def _group(
    results: Sequence[EvalResult],
    judge: Mapping[int, float],
    keep: Iterable[int],
    catalogue: Mapping[str, Mapping[str, Metric]],
) -> dict[str, Any]:
    members = list(keep)
    # A question the memory failed on has no score: it is counted, not averaged.
    indices = [i for i in members if results[i].memory_error is None]
    local = {position: judge[i] for position, i in enumerate(indices) if i in judge}
    block = _block([results[i] for i in indices], local, catalogue)
    low, high = _judge_interval([results[i] for i in indices], local)
    block[JUDGE_INTERVAL[0]], block[JUDGE_INTERVAL[1]] = low, high
    return {"questions": len(members), "memory_errors": len(members) - len(indices), **block}


#: The keys of a block's Wilson 95% interval of its judge accuracy, its low and high
#: bound; both ``None`` with no judged question or with partial credit (see
#: :func:`judge_interval`). Two numbers, not a pair: a block holds numbers only.
JUDGE_INTERVAL = ("judge_ci95_low", "judge_ci95_high")


def judge_interval(block: Mapping[str, Any]) -> tuple[float, float] | None:
    """The Wilson 95% interval of a block's judge accuracy (:data:`JUDGE_INTERVAL`);
    ``None`` when it has none (nothing judged, partial credit, or metrics written before
    the interval was)."""
    low, high = (block.get(key) for key in JUDGE_INTERVAL)
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return float(low), float(high)
    return None


def _judge_interval(
    results: Sequence[EvalResult], judge: Mapping[int, float]
) -> tuple[float | None, float | None]:
    """The Wilson 95% interval of the share of judged questions judged correct, over the
    questions the ``judge`` metric averages; ``(None, None)`` when none was judged or when
    a score is neither 0 nor 1 (BEAM's rubric: its mean is a score, not a proportion)."""
    scores = [judge[i] for i, r in enumerate(results) if _has("judge", r, judge.get(i))]
    found = binary_interval(scores)
    return (None, None) if found is None else (found.low, found.high)


def result_groups(results: Sequence[EvalResult]) -> dict[str, list[int]]:
    """The positions of ``results`` in each block of :func:`compute_metrics`.

    One key per category present, in report order (the categories of the results'
    benchmarks in their order, then any other in order of appearance), then
    ``"overall"`` (without the questions of a category its benchmark's
    ``headline_excludes`` names) and ``"overall_with_adversarial"`` (every question).
    """
    order: dict[str, None] = {}
    excluded: dict[str, frozenset[str]] = {}
    for dataset in dict.fromkeys(r.dataset for r in results):
        benchmark = find_benchmark(dataset)
        excluded[dataset] = frozenset() if benchmark is None else benchmark.headline_excludes
        order.update(dict.fromkeys(() if benchmark is None else benchmark.categories))
    present = dict.fromkeys(r.category for r in results)
    order.update(present)
    groups = {
        category: [i for i, r in enumerate(results) if r.category == category]
        for category in order
        if category in present
    }
    everything = range(len(results))
    groups["overall"] = [
        i for i in everything if results[i].category not in excluded[results[i].dataset]
    ]
    groups["overall_with_adversarial"] = list(everything)
    return groups


def _run_metrics(results: Sequence[EvalResult]) -> dict[str, Any]:
    """The blocks of the run metrics the results' benchmarks contribute, by name."""
    contributed: dict[str, tuple[RunMetric, set[str]]] = {}
    for dataset in dict.fromkeys(r.dataset for r in results):
        for metric in run_metrics_of(dataset):
            contributed.setdefault(metric.name, (metric, set()))[1].add(dataset)
    blocks: dict[str, Any] = {}
    for name, (metric, datasets) in contributed.items():
        block = metric.compute(
            [r for r in results if r.dataset in datasets and r.memory_error is None]
        )
        if block is not None:
            blocks[name] = block
    return blocks


def compute_measurements(results: Sequence[EvalResult]) -> dict[str, Any]:
    """The metrics that are not ``recorded`` (:class:`~himga.eval.Metric`: retrieval
    latency p50 / p95, context size), in the shape of :func:`compute_metrics`
    (``"overall"``, ``"overall_with_adversarial"``, ``"by_category"``; a block maps each
    metric's name to the aggregate of its questions' scores, ``None`` with none).
    Questions with a memory error are left out, as there."""
    catalogue = _metrics([r.dataset for r in results] or [""])
    measured = [m for m in _columns(catalogue).values() if not m.recorded]

    def block(members: Sequence[int]) -> dict[str, float | None]:
        kept = [i for i in members if results[i].memory_error is None]
        values: dict[str, float | None] = {}
        for metric in measured:
            scores = []
            for i in kept:
                own = catalogue[results[i].dataset].get(metric.name)
                if own is None or not _has(own.needs, results[i], None):
                    continue
                score = own.score(results[i], None)
                if score is not None:
                    scores.append(score)
            values[metric.name] = metric.aggregate(scores)
        return values

    groups = result_groups(results)
    overall = groups.pop("overall")
    everything = groups.pop("overall_with_adversarial")
    return {
        "overall": block(overall),
        "overall_with_adversarial": block(everything),
        "by_category": {category: block(members) for category, members in groups.items()},
    }


def _judged(
    results: Sequence[EvalResult], judge_scores: Sequence[float] | None
) -> dict[int, float]:
    """The judge's score of each result it scored, by index: ``NaN`` (unjudged) and the
    results of a failed LLM or memory call (never scored) left out. ``ValueError`` when
    ``judge_scores`` are not aligned with ``results``."""
    if judge_scores is not None and len(judge_scores) != len(results):
        raise ValueError(f"judge_scores has {len(judge_scores)} scores for {len(results)} results")
    return {
        i: float(score)
        for i, score in enumerate(judge_scores or ())
        if not math.isnan(score) and results[i].error is None and results[i].memory_error is None
    }


def _counts(
    results: Sequence[EvalResult], judge: Mapping[int, float], *, judging: bool
) -> dict[str, int]:
    """The ``counts`` of :func:`compute_metrics`; ``judge_errors`` (answered but not
    judged) is 0 when the results were not ``judging`` at all."""
    answered = sum(_answered(r) for r in results)
    return {
        "questions": len(results),
        "memory_errors": sum(r.memory_error is not None for r in results),
        "answered": answered,
        "errors": sum(r.error is not None for r in results),
        "unanswered": sum(
            r.prediction is None and r.error is None and r.memory_error is None for r in results
        ),
        "judged": len(judge),
        "judge_errors": answered - len(judge) if judging else 0,
    }


def compute_metrics(
    results: Sequence[EvalResult], judge_scores: Sequence[float] | None = None
) -> dict[str, Any]:
    """Per-category and overall metrics of ``results`` (from :func:`run_eval`).

    Returns a JSON-ready dict:

    * ``"overall"`` -- the headline: every question except those of a category
      its benchmark's ``headline_excludes`` names (LoCoMo's adversarial: the
      1,540 LoCoMo questions mem0 reports; LongMemEval excludes none, abstention
      questions keep their type, as in the official overall).
    * ``"overall_with_adversarial"`` -- every question (as MAGMA reports).
    * ``"by_category"`` -- one block per category present, in report order.
    * ``"counts"`` -- ``questions``, ``memory_errors`` (questions a memory call
      failed on), ``answered``, ``errors`` (failed LLM calls), ``unanswered``
      (no LLM), ``judged``, ``judge_errors`` (answered but not judged).
    * ``"errors"`` -- ``{"sample_id", "question_id", "error"}`` of each failed call.
    * ``"memory_errors"`` -- each :class:`~himga.eval.MemoryCallError`, as a dict.
    * one key per run metric the results' benchmarks contribute and that has
      something to report (LongMemEval's ``"longmemeval_retrieval"``, for a
      searchable memory).

    Each block has ``questions``, ``memory_errors``, then for each need of a metric
    (see :class:`~himga.eval.Metric`) its count -- ``answered`` (and ``errors``),
    ``judged``, ``with_evidence``, ``ranked`` -- and the value of every metric
    with that need (:func:`~himga.eval.available_metrics`; a benchmark's own
    metrics for its results, e.g. LoCoMo's official ``f1``): the aggregate (the
    mean) of the non-``None`` scores of its questions, ``None`` with none. Metrics
    that are not ``recorded`` (latency, context size) are left to
    :func:`compute_measurements`. ``judge_ci95_low`` and ``judge_ci95_high``
    (:data:`JUDGE_INTERVAL`): the Wilson 95% interval of ``judge`` when every verdict is
    0 or 1, else ``None``.
    Questions with a memory error are counted, never scored; so are results with
    an LLM error.

    ``judge_scores`` (e.g. from :func:`~himga.eval.judge.batch_judge`) align
    with ``results``; ``NaN`` marks an unjudged result.
    """
    judge = _judged(results, judge_scores)
    # Without results, the blocks still have every global metric (as None).
    catalogue = _metrics([r.dataset for r in results] or [""])
    groups = result_groups(results)
    overall = groups.pop("overall")
    everything = groups.pop("overall_with_adversarial")
    errors = [r for r in results if r.error is not None]
    memory_errors = [r.memory_error for r in results if r.memory_error is not None]
    metrics: dict[str, Any] = {
        "counts": _counts(results, judge, judging=judge_scores is not None),
        "overall": _group(results, judge, overall, catalogue),
        "overall_with_adversarial": _group(results, judge, everything, catalogue),
        "by_category": {
            category: _group(results, judge, members, catalogue)
            for category, members in groups.items()
        },
        "errors": [
            {"sample_id": r.sample_id, "question_id": r.question_id, "error": r.error}
            for r in errors
        ],
        "memory_errors": [asdict(error) for error in memory_errors],
    }
    metrics.update(_run_metrics(results))
    if isinstance(judge_scores, JudgeScores):
        metrics["judge"] = judge_scores.describe()
    return metrics

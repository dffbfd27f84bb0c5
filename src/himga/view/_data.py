"""The viewer's data: the JSON documents both the server and the single HTML file hand the page.

Three kinds of document, the same in both modes, so the page has one code path:

* the leaderboard (:meth:`ViewData.leaderboard`): one entry per run, with its arm and
  per-category metrics (the registry's table columns, the judge's with its Wilson 95%
  interval), retrieval latency p50/p95,
  context size, model-call cost and wall time, and its recall@k curve;
* a run's question index (:meth:`ViewData.index`): one compact row per question,
  columns as arrays (what the question list filters, sorts, pages and diffs over);
* one question in full (:meth:`ViewData.question`): texts, evidence, the retrieved
  context with the spans of the evidence in it, answer, verdict, errors.

Only the index is sent whole (tens of bytes a question); each question's record,
whose context is the bulk of a run, is sent when the page shows it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from himga.eval import (
    RANK_KS,
    available_metrics,
    context_containment,
    judge_interval,
    question_scores,
)
from himga.runs import ARM_TITLES, HEADLINE_METRICS, PartialRun, Run, arm_of, run_status

__all__ = ["OUTCOMES", "ViewData", "evidence_spans", "outcome", "percentile"]

#: Each question's outcome, by its index in the question index's ``outcome`` column:
#: ``correct`` -- judged right (score >= 0.5) or, unjudged, an evidence turn's text is in
#: the retrieved context; ``wrong`` -- the opposite; ``error`` -- a memory, LLM or judge
#: error; ``unscored`` -- neither a verdict nor evidence to look for.
OUTCOMES = ("correct", "wrong", "error", "unscored")

_TEXT_SHOWN = 160  # characters of a question kept in the index (the page shows the rest)


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile ``share`` (0..1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def evidence_spans(context: str, texts: Sequence[str | None]) -> list[list[int]]:
    """The ``[start, end)`` character spans of each evidence text's occurrences in
    ``context``, sorted and merged where they overlap."""
    spans: list[list[int]] = []
    for text in texts:
        if not text:
            continue
        start = context.find(text)
        while start != -1:
            spans.append([start, start + len(text)])
            start = context.find(text, start + 1)
    spans.sort()
    merged: list[list[int]] = []
    for span in spans:
        if merged and span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
        else:
            merged.append(span)
    return merged


def outcome(run: Run | PartialRun, index: int) -> int:
    """The index in :data:`OUTCOMES` of question ``index`` of ``run``."""
    result = run.results[index]
    judge = run.judge[index]
    judge_error = run.judge_errors[index] if run.judge_errors else None
    if result.memory_error is not None or result.error is not None or judge_error:
        return OUTCOMES.index("error")
    if not math.isnan(judge):
        return OUTCOMES.index("correct" if judge >= 0.5 else "wrong")
    # Verbatim is enough to be found (whitespace-collapsed containment follows from it),
    # and much cheaper than collapsing a long context; only a miss pays for the check.
    if any(text and text.strip() and text in result.context for text in result.evidence_texts):
        return OUTCOMES.index("correct")
    found = context_containment(result)
    if found is None:
        return OUTCOMES.index("unscored")
    return OUTCOMES.index("correct" if found > 0 else "wrong")


def _number(value: Any) -> float | None:
    """A finite number as a float, else ``None`` (JSON has no NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class ViewData:
    """The documents of the viewer for ``runs`` (read by :func:`himga.runs.load_run`);
    run ``i`` is ``runs[i]``."""

    def __init__(self, runs: Sequence[Run | PartialRun]) -> None:
        self.runs = list(runs)
        self._scores = [self._score_metric(run) for run in self.runs]
        self._table_metrics = tuple(n for n, m in available_metrics().items() if m.in_table)

    @staticmethod
    def _score_metric(run: Run | PartialRun) -> str | None:
        overall = run.metrics.get("overall", {})
        # the per-question score the list shows and the diff subtracts: the headline's metric
        return next((m for m in HEADLINE_METRICS if _number(overall.get(m)) is not None), None)

    def leaderboard(self) -> dict[str, Any]:
        """Every run's entry, with the metric columns any of them has a value for."""
        registry = available_metrics()
        entries = [self._entry(i, run) for i, run in enumerate(self.runs)]
        shown = [
            {"key": name, "title": metric.title}
            for name, metric in registry.items()
            if metric.in_table and any(_has(entry, name) for entry in entries)
        ]
        return {"columns": shown, "ks": list(RANK_KS), "runs": entries}

    def _entry(self, i: int, run: Run | PartialRun) -> dict[str, Any]:
        metrics = run.metrics
        blocks: dict[str, Mapping[str, Any]] = {"overall": metrics.get("overall", {})}
        blocks |= metrics.get("by_category", {})
        ok = [r for r in run.results if r.memory_error is None]
        latencies = [r.retrieval_latency_s for r in ok]
        chars = [len(r.context) for r in ok]
        entry: dict[str, Any] = {
            "id": i,
            "path": str(run.path),
            "label": run.label,
            "dataset": run.dataset_name,
            "status": run_status(run),
            "done": len(run.results),
            "blocks": {
                name: {k: v for k, v in block.items() if _number(v) is not None}
                for name, block in blocks.items()
            },
            "intervals": _intervals(blocks),
            "latency_p50_s": percentile(latencies, 0.5),
            "latency_p95_s": percentile(latencies, 0.95),
            "context_chars": sum(chars) / len(chars) if chars else None,
            "score": self._scores[i],
            "recall": [_number(blocks["overall"].get(f"recall@{k}")) for k in RANK_KS],
        }
        if isinstance(run, PartialRun):
            identity = run.identity
            judge = identity.get("judge")
            entry |= {
                "arm": None,
                "memory": identity.get("memory_spec"),
                "arguments": identity.get("memory_arguments") or {},
                "total": run.planned,
                "date": run.started_at,
                "judge_model": None if not isinstance(judge, dict) else judge.get("model"),
                "wall_time_s": None,
                "cost": None,
            }
            return entry
        manifest = run.manifest
        costs = manifest.costs
        phases = () if costs is None else costs.phases.phases
        entry |= {
            "arm": ARM_TITLES[arm_of(manifest)],
            "memory": manifest.memory.spec,
            "arguments": dict(manifest.memory.arguments),
            "total": manifest.dataset.questions,
            "date": manifest.started_at,
            "judge_model": None if manifest.judge is None else manifest.judge.get("model"),
            "wall_time_s": manifest.wall_time_s,
            "cost": None
            if costs is None
            else {
                "calls": sum(p.calls for p in phases),
                "input_tokens": sum(p.input_tokens for p in phases),
                "output_tokens": sum(p.output_tokens for p in phases),
            },
        }
        return entry

    def index(self, i: int) -> dict[str, Any]:
        """Run ``i``'s question index: parallel arrays, one element per question in the
        run's order; ``category`` and ``outcome`` index ``categories`` and ``outcomes``,
        ``score`` is the question's value of ``score_metric`` (``None`` without one)."""
        run = self.runs[i]
        metric = self._scores[i]
        categories: dict[str, int] = {}
        columns: dict[str, list[Any]] = {
            name: [] for name in ("sample", "question_id", "category", "outcome", "score", "text")
        }
        for n, result in enumerate(run.results):
            columns["sample"].append(result.sample_id)
            columns["question_id"].append(result.question_id)
            columns["category"].append(categories.setdefault(result.category, len(categories)))
            columns["outcome"].append(outcome(run, n))
            score = None if metric is None else self._metrics(n, run, metric)[metric]
            columns["score"].append(_number(score))
            columns["text"].append(result.question[:_TEXT_SHOWN])
        return {
            "run": i,
            "categories": list(categories),
            "outcomes": list(OUTCOMES),
            "score_metric": metric,
            **columns,
        }

    @staticmethod
    def _metrics(n: int, run: Run | PartialRun, *only: str) -> dict[str, float | None]:
        """Question ``n``'s scores: those named in ``only``, or all."""
        judge = run.judge[n]
        value = None if math.isnan(judge) else judge
        return question_scores(run.results[n], value, only=only or None)

    def question(self, i: int, n: int) -> dict[str, Any]:
        """Question ``n`` of run ``i`` in full: the result record, its verdict, outcome and
        the spans of the evidence texts in its context; ``IndexError`` when there is none."""
        run = self.runs[i]
        if not 0 <= n < len(run.results):
            raise IndexError(f"run {i} has no question {n}")
        result = run.results[n]
        record = result.to_dict()
        judge = run.judge[n]
        record |= {
            "run": i,
            "index": n,
            "judge": None if math.isnan(judge) else judge,
            "judge_error": run.judge_errors[n] if run.judge_errors else None,
            "outcome": OUTCOMES[outcome(run, n)],
            "evidence_spans": evidence_spans(result.context, result.evidence_texts),
            "metrics": {  # those of the tables, by title
                available_metrics()[name].title: _number(value)
                for name, value in self._metrics(n, run, *self._table_metrics).items()
                if _number(value) is not None
            },
        }
        return record


def _intervals(blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Each block's 95% intervals by metric key: the judge's Wilson interval, where the
    run's metrics have one (none for partial-credit verdicts, or a run written before)."""
    found: dict[str, dict[str, list[float]]] = {}
    for name, block in blocks.items():
        bounds = judge_interval(block)
        if bounds is not None:
            found[name] = {"judge": list(bounds)}
    return found


def _has(entry: Mapping[str, Any], name: str) -> bool:
    return any(name in block for block in entry["blocks"].values())

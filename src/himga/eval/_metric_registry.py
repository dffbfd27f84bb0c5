"""The metric registry: every metric defined once, looked up by name or title.

The built-in metrics apply to every result; :func:`register_metric` adds more. A
benchmark's own metrics (``Benchmark.metrics``) apply to its results only, a
:class:`~himga.eval.Metric` of a built-in's name replacing it there (LoCoMo's
official ``f1``), a :class:`~himga.eval.RunMetric` adding a block to the run's
metrics (LongMemEval's ``longmemeval_retrieval``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from himga._errors import HimgaError
from himga._registry import Registered
from himga.benchmarks._protocol import Benchmark
from himga.benchmarks._registry import BenchmarkLoadError, benchmarks, find_benchmark, warn_skipped
from himga.eval._ranking import (
    RANK_KS,
    all_evidence_recall_at_k,
    evidence_recall_at_k,
    ndcg_at_k,
)
from himga.scoring._metric import Metric, MetricNeed, RunMetric, percentile
from himga.scoring._result import EvalResult
from himga.scoring.metrics import bleu1, exact_match, token_f1

__all__ = [
    "NEEDS",
    "MetricTitles",
    "UnknownMetricError",
    "available_metrics",
    "context_containment",
    "get_metric",
    "metrics_of",
    "register_metric",
    "run_metrics_of",
]

NEEDS: dict[MetricNeed, str] = {
    "prediction": "answered",
    "judge": "judged",
    "context": "with_evidence",
    "ranking": "ranked",
}
"""Each need of a recorded metric, in block order, with the key of its count in a block."""


class UnknownMetricError(HimgaError, ValueError):
    """No metric has that name or title."""


def _squash(text: str) -> str:
    return " ".join(text.split())


def context_containment(result: EvalResult) -> float | None:
    """The fraction of the result's evidence turns whose text appears in its context.

    Texts are compared with whitespace collapsed; evidence turns missing from the
    sample are left out. ``None`` when no evidence turn has a text.
    """
    texts = [_squash(text) for text in result.evidence_texts if text is not None]
    if not texts:
        return None
    context = _squash(result.context)
    return sum(text in context for text in texts) / len(texts)


def _prediction(result: EvalResult) -> str:
    assert result.prediction is not None  # the "prediction" need guarantees it
    return result.prediction


def _f1(result: EvalResult, judge: float | None) -> float | None:
    # The gold of an unanswerable question explains why there is no answer: not one.
    return None if result.adversarial else token_f1(_prediction(result), result.answer)


def _bleu1(result: EvalResult, judge: float | None) -> float | None:
    # An unanswerable question's gold is a distractor or an explanation: overlap
    # with it is no measure of a right answer.
    return None if result.adversarial else bleu1(_prediction(result), result.answer)


def _exact_match(result: EvalResult, judge: float | None) -> float | None:
    return None if result.adversarial else exact_match(_prediction(result), result.answer)


def _judge(result: EvalResult, judge: float | None) -> float | None:
    return judge


def _containment(result: EvalResult, judge: float | None) -> float | None:
    return context_containment(result)


def _any(result: EvalResult, judge: float | None) -> float | None:
    containment = context_containment(result)
    return None if containment is None else float(containment > 0)


def _all(result: EvalResult, judge: float | None) -> float | None:
    containment = context_containment(result)
    return None if containment is None else float(containment == 1)


def _ranked(result: EvalResult) -> tuple[str | None, ...]:
    assert result.ranked_turn_ids is not None  # the "ranking" need guarantees it
    return result.ranked_turn_ids


def _rank_metrics(k: int) -> list[Metric]:
    def recall(result: EvalResult, judge: float | None) -> float:
        return evidence_recall_at_k(_ranked(result), result.evidence_turns, k)

    def all_recall(result: EvalResult, judge: float | None) -> float:
        return all_evidence_recall_at_k(_ranked(result), result.evidence_turns, k)

    def ndcg(result: EvalResult, judge: float | None) -> float:
        return ndcg_at_k(_ranked(result), result.evidence_turns, k)

    shown = k in (5, 10, 25, 50)
    return [
        Metric(f"recall@{k}", f"R@{k}", "ranking", recall, in_table=shown,
               description=f"share of the evidence turns in the top {k} of the search"),
        Metric(f"all_recall@{k}", f"all-R@{k}", "ranking", all_recall,
               description=f"1 when every evidence turn is in the top {k}"),
        Metric(f"ndcg@{k}", f"nDCG@{k}", "ranking", ndcg,
               description=f"binary-relevance nDCG@{k} of the search"),
    ]  # fmt: skip


def _retrieval_ms(result: EvalResult, judge: float | None) -> float:
    return result.retrieval_latency_s * 1000


def _context_chars(result: EvalResult, judge: float | None) -> float:
    # Characters, not tokens: exact for every memory and model, with no tokenizer. Not
    # recorded, only so that metrics.json stays what it was before the column existed.
    return float(len(result.context))


def _p50(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def _p95(values: Sequence[float]) -> float | None:
    return percentile(values, 95)


_BUILTIN: tuple[Metric, ...] = (
    Metric("judge", "judge", "judge", _judge, in_table=True,
           description="the judge's score (its benchmark's Judge)"),
    Metric("f1", "F1", "prediction", _f1, in_table=True,
           description="token F1 with the gold answer (not for unanswerable questions)"),
    Metric("bleu1", "BLEU-1", "prediction", _bleu1, in_table=True,
           description="BLEU-1 with the gold answer (not for unanswerable questions)"),
    Metric("exact_match", "EM", "prediction", _exact_match,
           description="same normalised words as the gold answer"),
    Metric("context_recall", "ctx-recall", "context", _containment,
           description="share of the evidence turns whose text is in the context"),
    Metric("context_recall_any", "ctx-any", "context", _any, in_table=True,
           description="1 when any evidence turn's text is in the context"),
    Metric("context_recall_all", "ctx-all", "context", _all, in_table=True,
           description="1 when every evidence turn's text is in the context"),
    *(metric for k in RANK_KS for metric in _rank_metrics(k)),
    Metric("retrieval_ms_p50", "ret-p50-ms", "retrieval", _retrieval_ms, higher_is_better=False,
           in_table=True, aggregate=_p50, decimals=1, recorded=False,
           description="median wall time of a question's retrieve (and search), in ms"),
    Metric("retrieval_ms_p95", "ret-p95-ms", "retrieval", _retrieval_ms, higher_is_better=False,
           in_table=True, aggregate=_p95, decimals=1, recorded=False,
           description="95th percentile wall time of a question's retrieve (and search), in ms"),
    Metric("context_chars", "ctx-chars", "retrieval", _context_chars, higher_is_better=False,
           in_table=True, decimals=0, recorded=False,
           description="mean size of the retrieved context, in characters"),
)  # fmt: skip

# Metrics have no entry points: the built-ins are the list above, the rest registered.
# Unlike benchmarks, a built-in cannot be replaced and a title may not be taken twice,
# checked under the registered entries' lock.
_metrics: Registered[str, Metric] = Registered(
    ValueError, lambda name: f"metric {name!r} is already registered; pass replace=True"
)


def register_metric(metric: Metric, *, replace: bool = False) -> None:
    """Add ``metric`` to the metrics of every result, after the built-in ones.

    A name already taken by a built-in or a registered metric is a ``ValueError``
    unless ``replace`` (which replaces a registered one; a built-in cannot be); so is
    a title another metric has (ignoring case: ``get_metric`` finds metrics by title).
    """
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric: {metric!r} is not a Metric")
    with _metrics.lock:
        if any(m.name == metric.name for m in _BUILTIN):
            raise ValueError(f"{metric.name!r} is a built-in metric and cannot be replaced")
        if metric.name in _metrics.entries and not replace:
            raise _metrics.duplicate(metric.name)
        clash = _same_title(metric, [*_BUILTIN, *_metrics.entries.values()])
        if clash is not None:
            raise ValueError(
                f"metric {metric.name!r} is titled {metric.title!r} like metric {clash.name!r}"
            )
        _metrics.entries[metric.name] = metric


def _same_title(metric: Metric, others: Iterable[Metric]) -> Metric | None:
    """The first of ``others`` of another name whose title is ``metric``'s, ignoring case."""
    title = metric.title.casefold()
    return next((o for o in others if o.name != metric.name and o.title.casefold() == title), None)


def _own(benchmark: Benchmark) -> list[Metric | RunMetric]:
    """``benchmark.metrics``, checked: :class:`BenchmarkLoadError` naming the benchmark
    for what is not a Metric or RunMetric, or a Metric titled like another metric."""
    own: list[Metric | RunMetric] = []
    for metric in benchmark.metrics:
        if not isinstance(metric, (Metric, RunMetric)):
            raise BenchmarkLoadError(
                f"benchmark {benchmark.name!r}: metric {metric!r} is not a Metric or RunMetric"
            )
        if isinstance(metric, Metric):
            peers = [m for m in own if isinstance(m, Metric)]
            clash = _same_title(metric, [*_global(), *peers])
            if clash is not None:
                raise BenchmarkLoadError(
                    f"benchmark {benchmark.name!r}: metric {metric.name!r} is titled "
                    f"{metric.title!r} like metric {clash.name!r}; refused"
                )
        own.append(metric)
    return own


def _global() -> list[Metric]:
    with _metrics.lock:
        return [*_BUILTIN, *_metrics.entries.values()]


def _merged(base: Sequence[Metric], own: Iterable[Metric | RunMetric]) -> list[Metric]:
    merged = {metric.name: metric for metric in base}
    merged.update((m.name, m) for m in own if isinstance(m, Metric))
    return list(merged.values())


def metrics_of(dataset: str) -> list[Metric]:
    """The metrics of a result of ``dataset``: the global ones with its benchmark's own
    (replacing by name, else after them)."""
    benchmark = find_benchmark(dataset)
    return _merged(_global(), () if benchmark is None else _own(benchmark))


def run_metrics_of(dataset: str) -> list[RunMetric]:
    """The run metrics ``dataset``'s benchmark contributes."""
    benchmark = find_benchmark(dataset)
    if benchmark is None:
        return []
    return [metric for metric in _own(benchmark) if isinstance(metric, RunMetric)]


def available_metrics() -> dict[str, Metric]:
    """Every per-question metric by name, in table order: the built-in and registered
    ones, then those only a registered benchmark defines (a benchmark's replacement of
    a built-in is found under the benchmark, not here). A benchmark whose metrics are
    refused is left out, warned (:class:`BenchmarkPluginWarning`)."""
    found = {metric.name: metric for metric in _global()}
    for benchmark in benchmarks().values():
        try:
            own = _own(benchmark)
        except BenchmarkLoadError as exc:
            warn_skipped(str(exc))
            continue
        for metric in own:
            if isinstance(metric, Metric):
                found.setdefault(metric.name, metric)
    return found


class MetricTitles(Mapping[str, str]):
    """Each metric's title by key, read when asked: a built-in or registered metric's
    title without loading any benchmark plug-in, the others' from every benchmark."""

    def __getitem__(self, name: str) -> str:
        for metric in _global():
            if metric.name == name:
                return metric.title
        return available_metrics()[name].title

    def __iter__(self) -> Iterator[str]:
        return iter(available_metrics())

    def __len__(self) -> int:
        return len(available_metrics())


def get_metric(name: str) -> Metric:
    """The metric of key ``name`` (``"recall@10"``) or, ignoring case, of title ``name``
    (``"R@10"``); :class:`UnknownMetricError` listing the titles otherwise."""
    known = available_metrics()
    if name in known:
        return known[name]
    for metric in known.values():
        if metric.title.lower() == name.lower():
            return metric
    titles = ", ".join(metric.title for metric in known.values())
    raise UnknownMetricError(f"unknown metric {name!r} (known: {titles}, or their keys)")

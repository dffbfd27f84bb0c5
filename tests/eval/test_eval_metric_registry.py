"""The metric registry: one definition per metric; blocks are its aggregate of question_scores."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.locomo import F1 as LOCOMO_F1
from himga.eval import (
    MemoryCallError,
    Metric,
    UnknownMetricError,
    _metric_registry,
    available_metrics,
    compute_measurements,
    compute_metrics,
    format_table,
    get_metric,
    metrics_of,
    question_scores,
    register_metric,
    result_groups,
)
from himga.scoring._metric import percentile
from tests.eval.test_eval_support import make_result


def test_metrics_are_found_by_name_or_title() -> None:
    assert get_metric("recall@10").title == "R@10"
    assert get_metric("r@10").name == "recall@10"
    assert get_metric("nDCG@5").needs == "ranking"
    with pytest.raises(UnknownMetricError, match="R@10"):
        get_metric("recall@11")


def test_table_columns_come_from_the_registry_in_order() -> None:
    shown = [m.title for m in available_metrics().values() if m.in_table]
    assert shown[:9] == [
        "judge",
        "F1",
        "BLEU-1",
        "ctx-any",
        "ctx-all",
        "R@5",
        "R@10",
        "R@25",
        "R@50",
    ]


def test_a_benchmark_metric_replaces_the_builtin_of_its_name_for_its_results_only() -> None:
    assert {m.name: m for m in metrics_of("locomo")}["f1"] is LOCOMO_F1
    assert {m.name: m for m in metrics_of("longmemeval_s")}["f1"] is get_metric("f1")
    assert [m.name for m in metrics_of("locomo")] == [m.name for m in metrics_of("unknown")]


def test_builtins_cannot_be_replaced_and_names_not_taken_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # This test's registration must not leak into the other tests of the process.
    monkeypatch.setattr(_metric_registry._metrics, "entries", {})
    with pytest.raises(ValueError, match="built-in"):
        register_metric(Metric("f1", "F1", "prediction", lambda r, j: 0.0))
    mine = Metric("answer_length", "len", "prediction", lambda r, j: float(len(r.prediction or "")))
    register_metric(mine, replace=True)
    with pytest.raises(ValueError, match="already registered"):
        register_metric(mine)
    assert get_metric("len") is mine
    assert question_scores(make_result(prediction="Paris"))["answer_length"] == 5.0


answers = st.sampled_from(["Paris", "Rome", "Paris, in May", "not mentioned"])
kinds = st.sampled_from(["single-hop", "multi-hop", "adversarial"])


latencies = st.floats(min_value=0, max_value=10, allow_nan=False)


@pytest.mark.slow
@given(st.lists(st.tuples(kinds, answers, st.booleans(), latencies), min_size=1, max_size=10))
def test_a_block_is_the_aggregate_of_its_questions_scores(
    rows: list[tuple[str, str, bool, float]],
) -> None:
    results = [
        make_result(
            question_id=f"q{i}",
            category=kind,
            adversarial=kind == "adversarial",
            prediction=prediction,
            ranked_turn_ids=("D1:1",) if ranked else None,
            retrieval_latency_s=latency,
        )
        for i, (kind, prediction, ranked, latency) in enumerate(rows)
    ]
    blocks: dict[bool, dict[str, Any]] = {}
    for recorded, found in (
        (True, compute_metrics(results)),
        (False, compute_measurements(results)),
    ):
        blocks[recorded] = {**found["by_category"], "overall": found["overall"]}
        blocks[recorded]["overall_with_adversarial"] = found["overall_with_adversarial"]
    for group, members in result_groups(results).items():
        for name in question_scores(results[0]):
            metric = get_metric(name)
            values = [question_scores(results[i])[name] for i in members]
            defined = [v for v in values if v is not None]
            expected = metric.aggregate(defined)
            got = blocks[metric.recorded][group][name]
            assert (got is None and expected is None) or math.isclose(got, expected or 0.0)
            assert metric.recorded or name not in blocks[True][group]  # not in metrics.json


def test_percentile_interpolates_between_the_closest_ranks() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([float(v) for v in range(1, 21)], 95) == pytest.approx(19.05)


def test_latency_and_context_size_are_measured_table_columns_not_recorded() -> None:
    results = [
        make_result(question_id=f"q{i}", retrieval_latency_s=seconds, context="x" * size)
        for i, (seconds, size) in enumerate([(0.001, 10), (0.002, 20), (0.003, 30), (0.1, 40)])
    ]
    failed = make_result(
        question_id="lost",
        retrieval_latency_s=9.0,
        memory_error=MemoryCallError("s", "lost", "retrieve", "RuntimeError", "boom"),
    )
    block = compute_measurements([*results, failed])["overall"]
    assert block == {  # the memory error is counted, never timed
        "retrieval_ms_p50": pytest.approx(2.5),
        "retrieval_ms_p95": pytest.approx(3 + 0.85 * 97),
        "context_chars": 25.0,
    }
    recorded = compute_metrics([*results, failed])["overall"]
    assert not set(block) & set(recorded)  # metrics.json stays reproducible: no wall time
    # The measured columns close the built-in table, in this order (another test in this
    # process may have registered a metric of its own after them).
    titles = [m.title for m in available_metrics().values() if m.in_table]
    start = titles.index("ret-p50-ms")
    assert titles[start : start + 3] == ["ret-p50-ms", "ret-p95-ms", "ctx-chars"]
    assert all(get_metric(t).recorded for t in titles[:start])
    assert not get_metric("ret-p95-ms").higher_is_better
    table = format_table(
        compute_metrics(results), dataset="locomo", measurements=compute_measurements(results)
    )
    assert table.splitlines()[0].split()[-3:] == ["ret-p50-ms", "ret-p95-ms", "ctx-chars"]
    assert table.splitlines()[-1].split()[-3:] == ["2.5", "85.5", "25"]
    assert "ctx-chars" not in format_table(compute_metrics(results), dataset="locomo")

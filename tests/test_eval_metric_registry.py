"""The metric registry: one definition per metric; blocks are its aggregate of question_scores."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.locomo import F1 as LOCOMO_F1
from himga.eval import (
    Metric,
    UnknownMetricError,
    _metric_registry,
    available_metrics,
    compute_metrics,
    get_metric,
    metrics_of,
    question_scores,
    register_metric,
    result_groups,
)
from tests.test_eval_support import make_result


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
    monkeypatch.setattr(_metric_registry, "_registered", {})
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


@given(st.lists(st.tuples(kinds, answers, st.booleans()), min_size=1, max_size=10))
def test_a_block_is_the_mean_of_its_questions_scores(rows: list[tuple[str, str, bool]]) -> None:
    results = [
        make_result(
            question_id=f"q{i}",
            category=kind,
            adversarial=kind == "adversarial",
            prediction=prediction,
            ranked_turn_ids=("D1:1",) if ranked else None,
        )
        for i, (kind, prediction, ranked) in enumerate(rows)
    ]
    metrics = compute_metrics(results)
    groups = result_groups(results)
    blocks = {**metrics["by_category"], "overall": metrics["overall"]}
    blocks["overall_with_adversarial"] = metrics["overall_with_adversarial"]
    for group, members in groups.items():
        for name in question_scores(results[0]):
            values = [question_scores(results[i])[name] for i in members]
            defined = [v for v in values if v is not None]
            expected = sum(defined) / len(defined) if defined else None
            got = blocks[group][name]
            assert (got is None and expected is None) or math.isclose(got, expected or 0.0)

"""compute_metrics: both aggregates, per category, errors counted not scored, retrieval metrics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.locomo import locomo_f1
from himga.data.schema import Category
from himga.eval import compute_metrics, context_containment, judge_interval, question_scores
from himga.eval._intervals import wilson_interval
from himga.eval._ranking import RANK_KS
from tests.eval.test_eval_support import make_result


@pytest.mark.slow
def test_an_abstention_explanation_is_not_scored_as_an_answer() -> None:
    explanation = "You did not mention this information. You mentioned Paris but not Rome."
    results = [
        make_result(
            question_id="1",
            dataset="longmemeval_s",
            category=Category.MULTI_SESSION,
            answer="Paris",
            prediction="Paris",
        ),
        make_result(
            question_id="2",
            dataset="longmemeval_s",
            category=Category.MULTI_SESSION,
            adversarial=True,
            answer=explanation,
            prediction="That was never mentioned.",
        ),
    ]
    block = compute_metrics(results)["by_category"]["multi-session"]
    assert (block["answered"], block["f1"], block["bleu1"], block["exact_match"]) == (
        2,
        1.0,
        1.0,
        1.0,
    )
    abstention = compute_metrics(results[1:])["overall"]
    assert (abstention["f1"], abstention["bleu1"], abstention["exact_match"]) == (None,) * 3


def test_overall_excludes_adversarial_and_the_other_aggregate_includes_it() -> None:
    results = [
        make_result(question_id="1", prediction="Paris"),
        make_result(question_id="2", category=Category.MULTI_HOP, answer="x, y", prediction="x"),
        make_result(
            question_id="3",
            category=Category.ADVERSARIAL,
            adversarial=True,
            prediction="Not mentioned",
        ),
    ]
    metrics = compute_metrics(results)
    assert metrics["overall"]["questions"] == 2
    assert metrics["overall"]["f1"] == pytest.approx((1.0 + 0.5) / 2)
    assert metrics["overall_with_adversarial"]["questions"] == 3
    assert metrics["overall_with_adversarial"]["f1"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert set(metrics["by_category"]) == {"single-hop", "multi-hop", "adversarial"}
    assert metrics["by_category"]["multi-hop"]["f1"] == locomo_f1("x", "x, y", 1)
    # the adversarial gold is a distractor: no BLEU or exact match against it
    assert metrics["by_category"]["adversarial"]["exact_match"] is None
    assert metrics["by_category"]["adversarial"]["bleu1"] is None
    assert metrics["overall_with_adversarial"]["exact_match"] == pytest.approx((1.0 + 0.0) / 2)
    assert metrics["counts"] == {
        "questions": 3,
        "memory_errors": 0,
        "answered": 3,
        "errors": 0,
        "unanswered": 0,
        "judged": 0,
        "judge_errors": 0,
    }
    assert "judge" not in metrics


def test_errors_are_counted_and_listed_never_scored() -> None:
    results = [
        make_result(question_id="1", prediction="Rome"),
        make_result(question_id="2", prediction=None, error="RateLimitError: still 429"),
    ]
    metrics = compute_metrics(results, [0.0, 1.0])
    overall = metrics["overall"]
    assert (overall["questions"], overall["answered"], overall["errors"]) == (2, 1, 1)
    assert overall["f1"] == 0.0  # only the answered one
    assert overall["judge"] == 0.0  # a judge score on an errored result is ignored
    assert metrics["errors"] == [
        {"sample_id": "s", "question_id": "2", "error": "RateLimitError: still 429"}
    ]


def test_metrics_with_nothing_to_average_are_none() -> None:
    results = [make_result(prediction=None, evidence_turns=(), evidence_texts=())]
    overall = compute_metrics(results)["overall"]
    for key in ("f1", "bleu1", "exact_match", "judge", "context_recall", "recall@10", "ndcg@1"):
        assert overall[key] is None
    assert compute_metrics([])["overall"]["questions"] == 0


def test_context_containment_any_and_all() -> None:
    results = [
        make_result(
            question_id="1",
            evidence_turns=("D1:1", "D1:2", "D9:9"),
            evidence_texts=("Ann: I went to Paris", "Bob: nice", None),
        ),
        make_result(question_id="2", context="nothing relevant"),
    ]
    assert context_containment(results[0]) == 0.5  # the missing turn is left out
    assert context_containment(results[1]) == 0.0
    overall = compute_metrics(results)["overall"]
    assert overall["with_evidence"] == 2
    assert overall["context_recall"] == 0.25
    assert overall["context_recall_any"] == 0.5
    assert overall["context_recall_all"] == 0.0


def test_rank_metrics_use_the_ranked_turn_ids() -> None:
    results = [
        make_result(
            question_id="1", evidence_turns=("D1:1", "D1:2"), ranked_turn_ids=("D1:1", "D3:3")
        ),
        make_result(question_id="2", evidence_turns=("D1:1",), ranked_turn_ids=("D2:2", "D1:1")),
        make_result(question_id="3", ranked_turn_ids=None),
    ]
    overall = compute_metrics(results)["overall"]
    assert overall["ranked"] == 2
    assert overall["recall@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert overall["recall@5"] == pytest.approx((0.5 + 1.0) / 2)
    assert overall["all_recall@5"] == pytest.approx(0.5)
    assert overall["ndcg@5"] == pytest.approx((1 / (1 + 1 / math.log2(3)) + 1 / math.log2(3)) / 2)
    assert {f"recall@{k}" for k in RANK_KS} <= set(overall)


def test_judge_scores_must_align_with_results() -> None:
    with pytest.raises(ValueError, match="2 scores for 1 results"):
        compute_metrics([make_result()], [1.0, 0.0])


categories = st.sampled_from([c for c in Category if c.locomo_code is not None])


@given(st.lists(st.tuples(categories, st.booleans()), max_size=12))
def test_aggregates_partition_the_questions(rows: list[tuple[Category, bool]]) -> None:
    results = [
        make_result(
            question_id=str(i),
            category=c,
            prediction=None if failed else "Paris",
            error="x" if failed else None,
        )
        for i, (c, failed) in enumerate(rows)
    ]
    metrics = compute_metrics(results)
    blocks = metrics["by_category"].values()
    assert sum(b["questions"] for b in blocks) == len(results)
    assert sum(b["errors"] for b in blocks) == metrics["counts"]["errors"]
    adversarial = sum(c is Category.ADVERSARIAL for c, _ in rows)
    assert metrics["overall"]["questions"] == len(results) - adversarial
    assert metrics["overall_with_adversarial"]["questions"] == len(results)


def test_question_scores_only_scores_the_metrics_named() -> None:
    result = make_result(ranked_turn_ids=("D1:1",))
    every = question_scores(result, 1.0)
    some = question_scores(result, 1.0, only=("judge", "recall@10", "no-such-metric"))
    assert some == {"judge": every["judge"], "recall@10": every["recall@10"]}
    assert some["judge"] == 1.0
    assert question_scores(result, only=()) == {}


def test_every_block_has_the_wilson_interval_of_its_judge_accuracy() -> None:
    results = [
        make_result(question_id=str(i), category=category, prediction="Rome")
        for i, category in enumerate([Category.MULTI_HOP] * 4 + [Category.TEMPORAL] * 3)
    ]
    scores = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    metrics = compute_metrics(results, scores)
    expected = {
        "multi-hop": wilson_interval(3, 4),
        "temporal": wilson_interval(1, 3),
        "overall": wilson_interval(4, 7),
    }
    blocks = {**metrics["by_category"], "overall": metrics["overall"]}
    for name, proportion in expected.items():
        assert judge_interval(blocks[name]) == (proportion.low, proportion.high), name


def test_partial_credit_and_no_verdict_get_no_interval() -> None:
    results = [make_result(question_id=str(i), prediction="Rome") for i in range(3)]
    partial = compute_metrics(results, [1.0, 0.5, 0.0])["overall"]
    assert (partial["judge_ci95_low"], partial["judge_ci95_high"]) == (None, None)
    assert judge_interval(compute_metrics(results)["overall"]) is None
    # an unjudged (NaN) question is left out of the interval as it is of the mean
    overall = compute_metrics(results, [1.0, math.nan, 0.0])["overall"]
    proportion = wilson_interval(1, 2)
    assert judge_interval(overall) == (proportion.low, proportion.high)

"""Rank metrics: the LoCoMo scorer's recall definition, hand-computed cases and their laws."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.eval._ranking import (
    RANK_KS,
    all_evidence_recall_at_k,
    evidence_recall_at_k,
    ndcg_at_k,
)

Metric = Callable[[Sequence[str | None], Collection[str], int], float]
METRICS: list[Metric] = [evidence_recall_at_k, all_evidence_recall_at_k, ndcg_at_k]

turn_ids = st.sampled_from([f"D{s}:{t}" for s in range(1, 4) for t in range(1, 5)])
rankings = st.lists(turn_ids | st.none(), max_size=20)
evidences = st.lists(turn_ids, min_size=1, max_size=5)
ks = st.integers(min_value=1, max_value=25)


def test_rank_cutoffs_are_the_reported_ones() -> None:
    assert RANK_KS == (1, 5, 10, 25, 50)


def test_recall_counts_each_listed_evidence_id_like_the_official_scorer() -> None:
    # task_eval/evaluation.py: sum(ev in context for ev in evidence) / len(evidence)
    assert evidence_recall_at_k(["D1:3", "D5:1"], ["D1:3", "D2:4"], 1) == 0.5
    assert evidence_recall_at_k(["D1:3", "D5:1"], ["D1:3", "D2:4"], 2) == 0.5
    assert evidence_recall_at_k(["D5:1", "D2:4", "D1:3"], ["D1:3", "D2:4"], 3) == 1.0
    assert evidence_recall_at_k(["D1:3"], ["D1:3", "D1:3", "D2:1"], 5) == pytest.approx(2 / 3)


def test_all_evidence_recall_needs_every_turn() -> None:
    assert all_evidence_recall_at_k(["D1:3", "D5:1"], ["D1:3", "D2:4"], 2) == 0.0
    assert all_evidence_recall_at_k(["D2:4", "D1:3"], ["D1:3", "D2:4"], 2) == 1.0
    assert all_evidence_recall_at_k(["D2:4", "D1:3"], ["D1:3", "D2:4"], 1) == 0.0


def test_ndcg_hand_computed() -> None:
    # relevant at ranks 2 and 3; ideal puts two relevant turns at ranks 1 and 2
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(["x", "a", "b"], ["a", "b"], 3) == pytest.approx(dcg / ideal)
    # ideal DCG over min(k, |evidence|): one slot, filled by a relevant turn
    assert ndcg_at_k(["a", "x"], ["a", "b", "c"], 1) == 1.0
    # a repeated id gains once
    assert ndcg_at_k(["a", "a"], ["a", "b"], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_none_ids_never_match() -> None:
    assert evidence_recall_at_k([None, None], ["D1:1"], 2) == 0.0
    assert ndcg_at_k([None, "D1:1"], ["D1:1"], 2) == pytest.approx(1 / math.log2(3))


@pytest.mark.parametrize("metric", METRICS)
def test_question_without_evidence_scores_one(metric: Metric) -> None:
    assert metric(["D1:1"], [], 5) == 1.0
    assert metric([], [], 1) == 1.0


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_rejected(metric: Metric, k: int) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        metric(["D1:1"], ["D1:1"], k)


@given(ranked=rankings, evidence=evidences, k=ks)
def test_metrics_are_bounded(ranked: list[str | None], evidence: list[str], k: int) -> None:
    for metric in METRICS:
        assert 0.0 <= metric(ranked, evidence, k) <= 1.0


@given(ranked=rankings, evidence=evidences, k=ks)
def test_recalls_are_monotone_in_k(ranked: list[str | None], evidence: list[str], k: int) -> None:
    for metric in (evidence_recall_at_k, all_evidence_recall_at_k):
        assert metric(ranked, evidence, k) <= metric(ranked, evidence, k + 1)


@given(ranked=rankings, evidence=evidences, k=ks)
def test_all_evidence_recall_is_the_strict_version(
    ranked: list[str | None], evidence: list[str], k: int
) -> None:
    recall = evidence_recall_at_k(ranked, evidence, k)
    assert all_evidence_recall_at_k(ranked, evidence, k) == (1.0 if recall == 1.0 else 0.0)


@given(ranked=rankings, evidence=evidences, k=ks, data=st.data())
def test_recall_ignores_order_within_the_top_k_and_of_the_evidence(
    ranked: list[str | None], evidence: list[str], k: int, data: st.DataObject
) -> None:
    shuffled_top = data.draw(st.permutations(ranked[:k])) + ranked[k:]
    shuffled_evidence = data.draw(st.permutations(evidence))
    expected = evidence_recall_at_k(ranked, evidence, k)
    assert evidence_recall_at_k(shuffled_top, shuffled_evidence, k) == pytest.approx(expected)
    assert ndcg_at_k(ranked, shuffled_evidence, k) == ndcg_at_k(ranked, evidence, k)


@given(ranked=rankings, evidence=evidences)
def test_recall_beyond_the_ranking_is_coverage(
    ranked: list[str | None], evidence: list[str]
) -> None:
    found = sum(turn in ranked for turn in evidence) / len(evidence)
    assert evidence_recall_at_k(ranked, evidence, len(ranked) + 1) == pytest.approx(found)


@given(evidence=evidences, rest=rankings, k=ks)
def test_ndcg_is_one_when_the_evidence_comes_first(
    evidence: list[str], rest: list[str | None], k: int
) -> None:
    assert ndcg_at_k(list(dict.fromkeys(evidence)) + rest, evidence, k) == pytest.approx(1.0)


@given(ranked=rankings, evidence=evidences, k=ks)
def test_ndcg_is_zero_exactly_when_no_evidence_is_in_the_top_k(
    ranked: list[str | None], evidence: list[str], k: int
) -> None:
    no_hit = evidence_recall_at_k(ranked, evidence, k) == 0.0
    assert (ndcg_at_k(ranked, evidence, k) == 0.0) == no_hit


@given(
    before=rankings,
    behind=turn_ids | st.none(),
    after=rankings,
    evidence=evidences,
    k=ks,
    data=st.data(),
)
def test_ndcg_never_drops_when_a_relevant_turn_moves_up(
    before: list[str | None],
    behind: str | None,
    after: list[str | None],
    evidence: list[str],
    k: int,
    data: st.DataObject,
) -> None:
    # Built so that a swap always exists (no filtering, which some seeds starved):
    # a relevant id, first seen at i, directly behind a non-relevant one.
    relevant = set(evidence)
    moved = data.draw(st.sampled_from(sorted(relevant)))
    before = [turn for turn in before if turn != moved]
    left = None if behind in relevant else behind
    ranked = [*before, left, moved, *after]
    i = len(before) + 1
    promoted = [*ranked[: i - 1], ranked[i], ranked[i - 1], *ranked[i + 1 :]]
    assert ndcg_at_k(promoted, evidence, k) >= ndcg_at_k(ranked, evidence, k) - 1e-12

"""BEAM's answer scores on hand-worked cases, and Kendall tau-b against scipy."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import kendalltau

from himga.benchmarks.beam._scoring import align, event_ordering_tau, kendall_tau_b, rubric_score


def test_rubric_score_is_the_mean_verdict() -> None:
    assert rubric_score([1.0, 0.5, 0.0]) == pytest.approx(0.5)
    assert rubric_score([0.5]) == 0.5


def test_the_official_rubric_score_truncates_half_points() -> None:
    # int(0.5) == 0: one full and two half points make 1/3, not 2/3.
    assert rubric_score([1.0, 0.5, 0.5], official=True) == pytest.approx(1 / 3)
    assert rubric_score([1.0, 0.5, 0.5]) == pytest.approx(2 / 3)
    assert rubric_score([0.5], official=True) == 0.0


def test_a_question_without_verdicts_has_no_score() -> None:
    with pytest.raises(ValueError, match="no rubric verdicts"):
        rubric_score([])


def test_kendall_tau_b_by_hand() -> None:
    assert kendall_tau_b([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    # 6 pairs, one tied in y, the other five concordant: 5 / sqrt(6 * 5).
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 2, 3]) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau_b([1, 2], [5, 5]) is None
    assert kendall_tau_b([1], [1]) is None


@given(
    st.integers(0, 8).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 4), min_size=n, max_size=n),
            st.lists(st.integers(1, 4), min_size=n, max_size=n),
        )
    )
)
def test_kendall_tau_b_is_scipys_statistic(pair: tuple[list[int], list[int]]) -> None:
    x, y = pair
    ours = kendall_tau_b(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = kendalltau(x, y, variant="b").statistic if x else math.nan
    if ours is None:
        assert math.isnan(theirs)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_align_takes_the_first_unused_match_in_order() -> None:
    matches = {(0, 0), (0, 1), (1, 1)}  # line 1 matches A, line 2 matches A and B
    aligned = align(["A", "B"], ["one", "two", "three"], lambda i, j: (i, j) in matches)
    # "two" is tried against A first, but A is used up by "one": it becomes B.
    assert aligned == ["A", "B", "three"]


def test_event_ordering_by_hand() -> None:
    assert event_ordering_tau(["A", "B", "C"], ["A", "B", "C"]) == 1.0
    assert event_ordering_tau(["A", "B", "C"], ["C", "B", "A"]) == 0.0
    # B missing: union [A, B, C], ranks x = [1, 2, 3], y = [1, 4, 2];
    # (A,B) and (A,C) concordant, (B,C) discordant: tau = 1/3, normalised 2/3.
    assert event_ordering_tau(["A", "B", "C"], ["A", "C"]) == pytest.approx(2 / 3)


def test_blank_lines_cost_an_exact_answer_as_the_official_script_counts_them() -> None:
    # ["A", "", "B", "", "C"]: union [A, B, C, ""], x = [1, 2, 3, 5], y = [1, 3, 5, 4]:
    # 5 of 6 pairs concordant, (C, "") discordant: tau = 4/6, normalised 5/6.
    assert event_ordering_tau(["A", "B", "C"], ["A", "", "B", "", "C"]) == pytest.approx(5 / 6)


def test_undefined_tau_scores_exact_match_one_else_zero() -> None:
    assert event_ordering_tau(["A"], ["A"]) == 1.0
    assert event_ordering_tau(["A", "B"], []) == 0.0


@given(st.permutations(["A", "B", "C", "D", "E"]))
def test_event_ordering_is_one_only_in_the_right_order(order: list[str]) -> None:
    score = event_ordering_tau(["A", "B", "C", "D", "E"], order)
    assert 0.0 <= score <= 1.0
    assert (score == 1.0) == (order == ["A", "B", "C", "D", "E"])
    assert (score == 0.0) == (order == ["E", "D", "C", "B", "A"])

"""Judge agreement (issue 32): Cohen's and Fleiss' kappa against textbook examples and
their laws, the one-sided acceptance share, and the rank-flip rate."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from himga.eval._agreement import (
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_of_counts,
    one_sided,
    rank_flips,
)

verdicts = st.lists(st.sampled_from([0.0, 1.0, math.nan]), min_size=1, max_size=40)


def _varied(scores: list[float]) -> bool:
    """Both verdicts occur among the judged questions: kappa is defined then."""
    judged = {s for s in scores if not math.isnan(s)}
    return judged == {0.0, 1.0}


def test_cohen_kappa_of_the_textbook_table() -> None:
    # Wikipedia, "Cohen's kappa", worked example: of 50 proposals both readers said yes to
    # 20, no to 15; A yes and B no to 5, A no and B yes to 10. p_o = 0.7, p_e = 0.5.
    a = [1.0] * 20 + [0.0] * 15 + [1.0] * 5 + [0.0] * 10
    b = [1.0] * 20 + [0.0] * 15 + [0.0] * 5 + [1.0] * 10
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_kappa_of_the_textbook_table() -> None:
    # Fleiss (1971) as Wikipedia works it: 10 subjects, 14 raters, 5 categories; 0.210.
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa_of_counts(counts) == pytest.approx(0.20993, abs=1e-5)


@given(verdicts)
def test_a_judge_agrees_with_itself_perfectly(scores: list[float]) -> None:
    assume(_varied(scores))
    assert cohen_kappa(scores, scores) == pytest.approx(1.0)
    assert fleiss_kappa([scores, scores, scores]) == pytest.approx(1.0)
    assert one_sided(scores, scores) == 0.0


@given(st.data())
def test_kappa_is_symmetric_and_at_most_one(data: st.DataObject) -> None:
    a = data.draw(verdicts)
    b = data.draw(st.lists(st.sampled_from([0.0, 1.0, math.nan]), min_size=len(a), max_size=len(a)))
    kappa = cohen_kappa(a, b)
    assert kappa == cohen_kappa(b, a)
    if kappa is not None:
        assert -1.0 <= kappa <= 1.0 + 1e-12


@given(st.data())
def test_two_judges_fleiss_and_cohen_tell_the_same_direction(data: st.DataObject) -> None:
    # With two raters Fleiss' kappa is Scott's pi: not Cohen's, but both are 1 for
    # perfect agreement and negative for a judge that always says the opposite.
    a = data.draw(verdicts)
    assume(_varied(a))
    opposite = [s if math.isnan(s) else 1.0 - s for s in a]
    pi, kappa = fleiss_kappa([a, opposite]), cohen_kappa(a, opposite)
    assert pi is not None
    assert kappa is not None
    assert pi < 0
    assert kappa < 0
    forth, back = one_sided(a, opposite), one_sided(opposite, a)
    assert forth is not None
    assert back is not None
    assert forth + back == pytest.approx(1.0)


def test_undefined_kappas_are_none() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa([1.0, 1.0], [1.0, 1.0]) is None  # chance agreement is 1
    assert cohen_kappa([math.nan], [1.0]) is None
    assert one_sided([math.nan], [1.0]) is None
    with pytest.raises(ValueError, match="align"):
        cohen_kappa([1.0], [1.0, 0.0])


def test_partial_scores_are_verdicts_by_majority() -> None:
    assert one_sided([0.5, 0.25, 1.0], [0.0, 0.0, 0.75]) == pytest.approx(1 / 3)


@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=30), st.integers(0, 5))
def test_a_judge_counted_twice_flips_no_more_than_once(scores: list[float], seed: int) -> None:
    better = [1.0] * len(scores)
    assume(any(s == 0.0 for s in scores))
    twice = rank_flips(
        {"x": scores, "y": scores}, {"x": better, "y": better}, resamples=200, seed=seed
    )
    once = rank_flips({"x": scores}, {"x": better}, resamples=200, seed=seed)
    assert twice.holds
    assert once.holds
    # Only a resample whose difference is 0 (it drew no question B wins) is a "flip".
    assert twice.flip_rate == once.flip_rate
    # One judge, or two that always agree, never change the winner.
    assert twice.winner_change_rate == once.winner_change_rate == 0.0
    zero = rank_flips({"x": scores}, {"x": scores}, resamples=50, seed=seed)
    assert not zero.holds
    assert zero.flip_rate == 1.0
    assert zero.winner_change_rate == 0.0


@given(
    st.lists(st.tuples(*[st.sampled_from([0.0, 1.0, math.nan])] * 4), min_size=1, max_size=30),
    st.integers(0, 5),
)
def test_a_changed_winner_is_a_flip(rows: list[tuple[float, ...]], seed: int) -> None:
    a = {"x": [r[0] for r in rows], "y": [r[1] for r in rows]}
    b = {"x": [r[2] for r in rows], "y": [r[3] for r in rows]}
    found = rank_flips(a, b, resamples=100, seed=seed)
    if found.flip_rate is None:
        assert found.winner_change_rate is None
    else:
        assert found.winner_change_rate is not None
        assert 0.0 <= found.winner_change_rate <= found.flip_rate <= 1.0


def test_a_judge_that_accepts_nothing_flips_every_resample_but_changes_no_winner() -> None:
    # The degenerate panel of docs/answers.md: a judge tied in every resample makes
    # the judges "disagree on the sign" always, while the winner never changes.
    a = {"judge": [1.0, 0.0, 0.0, 0.0] * 10, "rejects-all": [0.0] * 40}
    b = {"judge": [1.0, 1.0, 0.0, 0.0] * 10, "rejects-all": [0.0] * 40}
    found = rank_flips(a, b, resamples=300)
    assert found.flip_rate == 1.0
    assert found.winner_change_rate == 0.0


def test_judges_that_disagree_on_the_winner_flip_it() -> None:
    a_lenient = [1.0, 1.0, 1.0, 0.0] * 10
    b_lenient = [1.0, 1.0, 0.0, 0.0] * 10
    a_strict = [0.0, 0.0, 0.0, 0.0] * 10
    b_strict = [1.0, 0.0, 0.0, 0.0] * 10
    found = rank_flips(
        {"lenient": a_lenient, "strict": a_strict},
        {"lenient": b_lenient, "strict": b_strict},
        resamples=500,
    )
    assert found.differences == {"lenient": pytest.approx(-0.25), "strict": pytest.approx(0.25)}
    assert not found.holds
    assert found.flip_rate is not None
    assert found.flip_rate > 0.9
    assert found.winner_change_rate is not None
    assert found.winner_change_rate > 0.9

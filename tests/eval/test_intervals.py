"""The Wilson score interval against published values and its laws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.eval._intervals import Proportion, binary_interval, wilson_interval


def bounds(p: Proportion) -> tuple[float, float]:
    assert p.low is not None
    assert p.high is not None
    return p.low, p.high


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # worked by hand from the closed form (0 of n: high = z^2 / (n + z^2))
        (81, 263, 0.2553, 0.3662),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
    ],
)
def test_matches_reference_values(successes: int, n: int, low: float, high: float) -> None:
    p = wilson_interval(successes, n)
    assert p.low == pytest.approx(low, abs=5e-4)
    assert p.high == pytest.approx(high, abs=5e-4)


@given(st.integers(0, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_interval_lies_in_the_unit_range_and_holds_the_rate(case: tuple[int, int]) -> None:
    successes, n = case
    p = wilson_interval(successes, n)
    if n == 0:
        assert (p.low, p.high, p.rate) == (None, None, None)
        return
    low, high = bounds(p)
    assert p.rate is not None
    assert 0.0 <= low <= p.rate <= high <= 1.0


@given(st.integers(1, 2000), st.data())
def test_more_data_at_the_same_rate_narrows_it(n: int, data: st.DataObject) -> None:
    successes = data.draw(st.integers(0, n))
    small, large = wilson_interval(successes, n), wilson_interval(4 * successes, 4 * n)
    (small_low, small_high), (large_low, large_high) = bounds(small), bounds(large)
    assert large_high - large_low <= small_high - small_low + 1e-12


@given(st.integers(1, 1000), st.data())
def test_it_is_symmetric_under_swapping_successes_and_failures(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    a, b = wilson_interval(k, n), wilson_interval(n - k, n)
    (a_low, a_high), (b_low, b_high) = bounds(a), bounds(b)
    assert a_low == pytest.approx(1 - b_high, abs=1e-12)
    assert a_high == pytest.approx(1 - b_low, abs=1e-12)


@pytest.mark.parametrize(("successes", "n"), [(-1, 3), (4, 3), (0, -1)])
def test_impossible_counts_are_refused(successes: int, n: int) -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(successes, n)


@given(st.lists(st.sampled_from([0.0, 1.0]), max_size=300))
def test_binary_scores_get_the_wilson_interval_of_their_ones(scores: list[float]) -> None:
    assert binary_interval(scores) == wilson_interval(int(sum(scores)), len(scores))


@given(
    st.lists(st.sampled_from([0.0, 1.0]), max_size=50),
    st.floats(0, 1).filter(lambda x: x not in (0.0, 1.0)),
    st.data(),
)
def test_partial_credit_gets_no_interval(
    scores: list[float], partial: float, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(scores)))
    assert binary_interval([*scores[:at], partial, *scores[at:]]) is None

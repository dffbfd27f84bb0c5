"""Paired bootstrap intervals and permutation p-values: coverage on synthetic paired data.

The coverage checks are deterministic -- every draw comes from a fixed seed --
and their tolerances come from the binomial standard error of a coverage
estimate over ``TRIALS`` independent data sets: ``3 * sqrt(p (1 - p) / TRIALS)``
around the nominal ``p`` (0.95 for the interval, 0.05 for the test's rejection
rate), about 0.021 and 0.021 for 1,000 trials. The data sets have 300 paired
questions, the size of a LoCoMo category, where the percentile bootstrap's
finite-sample bias is well inside that band.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from himga.eval._paired import PairedDifference, paired_differences

TRIALS = 1_000
QUESTIONS = 300
RESAMPLES = 1_000  # per trial; coverage does not need the CLI's 10,000
CHUNK = 100  # trials per call, each call with its own seed: independent resamples


def _band(p: float) -> tuple[float, float]:
    tolerance = 3 * math.sqrt(p * (1 - p) / TRIALS)
    return p - tolerance, p + tolerance


def _run(a: np.ndarray, b: np.ndarray, seed: int) -> list[PairedDifference]:
    found: list[PairedDifference] = []
    for start in range(0, a.shape[1], CHUNK):
        found += paired_differences(
            a[:, start : start + CHUNK],
            b[:, start : start + CHUNK],
            resamples=RESAMPLES,
            seed=seed + start,
        )
    return found


def _binary(rng: np.random.Generator, pa: float, pb: float, same: float) -> tuple[Any, Any]:
    """Paired 0/1 scores (like ctx-any): ``B`` reuses ``A``'s latent draw with probability
    ``same`` (correlated runs), so the true mean difference is exactly ``pb - pa``."""
    u = rng.random((QUESTIONS, TRIALS))
    v = np.where(rng.random((QUESTIONS, TRIALS)) < same, u, rng.random((QUESTIONS, TRIALS)))
    return (u < pa).astype(float), (v < pb).astype(float)


def _fractions(rng: np.random.Generator, shift: float, size: tuple[int, int]) -> tuple[Any, Any]:
    """Paired scores in [0, 1] with many exact 0s and 1s (like recall@k fractions)."""
    latent = rng.normal(0.3, 0.6, size)
    a = np.clip(latent + rng.normal(0, 0.3, size), 0, 1)
    b = np.clip(latent + shift + rng.normal(0, 0.3, size), 0, 1)
    return a, b


def test_bootstrap_interval_covers_a_known_binary_difference_at_the_nominal_rate() -> None:
    a, b = _binary(np.random.default_rng(11), pa=0.50, pb=0.55, same=0.8)
    found = _run(a, b, seed=1_000)
    covered = sum(d.ci_low <= 0.05 <= d.ci_high for d in found) / TRIALS  # type: ignore[operator]
    low, high = _band(0.95)
    assert low <= covered <= high, covered


def test_bootstrap_interval_covers_a_known_difference_of_skewed_fractions() -> None:
    # The true difference of clipped means, from two million pairs (standard error ~3e-4,
    # a hundredth of an interval's half-width).
    reference_a, reference_b = _fractions(np.random.default_rng(5), 0.08, (2_000_000, 1))
    truth = float(reference_b.mean() - reference_a.mean())
    a, b = _fractions(np.random.default_rng(12), 0.08, (QUESTIONS, TRIALS))
    found = _run(a, b, seed=2_000)
    covered = sum(d.ci_low <= truth <= d.ci_high for d in found) / TRIALS  # type: ignore[operator]
    low, high = _band(0.95)
    assert low <= covered <= high, covered


def test_permutation_test_rejects_a_true_null_at_its_level() -> None:
    a, b = _fractions(np.random.default_rng(13), 0.0, (QUESTIONS, TRIALS))  # exchangeable pairs
    found = _run(a, b, seed=3_000)
    rejected = sum(d.p_value < 0.05 for d in found) / TRIALS  # type: ignore[operator]
    low, high = _band(0.05)
    assert low <= rejected <= high, rejected


def test_a_real_difference_is_detected() -> None:
    a, b = _binary(np.random.default_rng(14), pa=0.50, pb=0.65, same=0.8)
    found = _run(a[:, :CHUNK], b[:, :CHUNK], seed=4_000)
    assert all(d.p_value is not None and d.p_value < 0.01 for d in found)
    assert all(d.ci_low is not None and d.ci_low > 0 for d in found)


def test_missing_values_pair_per_metric_and_empty_metrics_are_none() -> None:
    nan = math.nan
    a = [[1.0, nan, nan], [0.0, 1.0, nan], [1.0, 0.0, nan]]
    b = [[1.0, 1.0, 0.5], [1.0, nan, nan], [0.0, 1.0, nan]]
    first, second, third = paired_differences(a, b, resamples=200, seed=0)
    assert first.n == 3
    assert first.mean_a == pytest.approx(2 / 3)
    assert first.mean_b == pytest.approx(2 / 3)
    assert first.difference == pytest.approx(0.0)
    assert second.n == 1  # only the third question has both
    assert (second.mean_a, second.mean_b, second.difference) == (0.0, 1.0, 1.0)
    assert third == PairedDifference(0, None, None, None, None, None, None)
    assert first.p_value is not None
    assert 1 / 201 <= first.p_value <= 1.0


def test_same_seed_same_numbers_and_bad_arguments_are_refused() -> None:
    a, b = _binary(np.random.default_rng(15), pa=0.4, pb=0.45, same=0.5)
    assert paired_differences(a[:, :3], b[:, :3], resamples=300, seed=7) == paired_differences(
        a[:, :3], b[:, :3], resamples=300, seed=7
    )
    for resamples in (0, 1_000_001):
        with pytest.raises(ValueError, match="resamples must be between 1 and 1,000,000"):
            paired_differences(a, b, resamples=resamples)
    with pytest.raises(ValueError, match="one shape"):
        paired_differences(a[:, :2], b[:, :3])

"""Confidence intervals of a proportion (an accuracy, an acceptance rate)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Proportion", "binary_interval", "wilson_interval"]

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Proportion:
    """``successes`` of ``n`` with the Wilson score interval ``[low, high]`` (``None``
    when ``n`` is 0: no data, no interval)."""

    successes: int
    n: int
    low: float | None
    high: float | None

    @property
    def rate(self) -> float | None:
        """``successes / n``, ``None`` when ``n`` is 0."""
        return self.successes / self.n if self.n else None


def wilson_interval(successes: int, n: int, *, z: float = Z95) -> Proportion:
    """The Wilson score interval of ``successes`` out of ``n`` at the normal quantile ``z``
    (default: 95%, two-sided).

    Chosen over the normal ("Wald") interval because it stays inside [0, 1] and keeps
    its coverage at rates near 0 or 1 and at small ``n`` -- exactly where a judge's
    acceptance of wrong answers or a small category's accuracy lies. It always holds
    the observed rate. Raises ``ValueError`` unless ``0 <= successes <= n`` and ``z > 0``.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not z > 0:
        raise ValueError(f"z must be > 0, got {z}")
    if n == 0:
        return Proportion(0, 0, None, None)
    rate = successes / n
    z2 = z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    # Clamp the rounding of the exact endpoints (0 successes -> low is 0, all -> high is 1).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Proportion(successes, n, min(low, rate), max(high, rate))


def binary_interval(scores: Sequence[float], *, z: float = Z95) -> Proportion | None:
    """The Wilson interval (:func:`wilson_interval`) of the share of 1s among ``scores``
    when every score is 0 or 1 (a verdict per question: correct or not); ``None`` when
    any is not -- a rubric's partial credit (BEAM's 0.5) makes the mean a score, not a
    proportion, and a binomial interval of it would be wrong."""
    if any(score not in (0.0, 1.0) for score in scores):
        return None
    return wilson_interval(sum(score == 1.0 for score in scores), len(scores), z=z)

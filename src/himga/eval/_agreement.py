"""How far judges agree, and whether a ranking survives a change of judge.

Pure functions over per-question judge scores (``NaN``: the judge gave none). Every
score is read as a verdict: *accepted* when it is at least 0.5, else *rejected*
(a 1.0 / 0.0 judge's verdicts as they are; a rubric judge's mean score by majority).

* :func:`cohen_kappa`: Cohen's kappa of two judges over the questions both judged,
  ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` from each judge's own marginals (Cohen 1960);
* :func:`fleiss_kappa`: Fleiss' kappa of any number of judges over the questions
  every one judged (Fleiss 1971), from the per-question category counts;
* :func:`one_sided`: the share of questions one judge accepts and the other rejects;
* :func:`rank_flips`: whether "B beats A" (the sign of the mean score difference)
  holds under every judge, the share of paired bootstrap resamples (the
  resampling of :func:`~himga.eval._paired.paired_differences`) in which the judges
  disagree on that sign, and the share in which the winner itself changes (one judge
  has B ahead, another A).

A kappa is ``None`` where it is undefined: no question, or chance agreement of 1
(every verdict the same, so agreement cannot exceed chance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from himga._extras import require
from himga.eval._paired import DEFAULT_RESAMPLES, MAX_RESAMPLES, bootstrap_weights

__all__ = [
    "RankFlips",
    "accepted",
    "cohen_kappa",
    "fleiss_kappa",
    "fleiss_kappa_of_counts",
    "one_sided",
    "rank_flips",
]


def accepted(score: float) -> bool | None:
    """The verdict a score stands for: accepted at 0.5 or more; ``None`` for ``NaN``."""
    return None if math.isnan(score) else score >= 0.5


def _pairs(a: Sequence[float], b: Sequence[float]) -> list[tuple[bool, bool]]:
    if len(a) != len(b):
        raise ValueError(f"the judges scored {len(a)} and {len(b)} questions: align them first")
    found = []
    for x, y in zip(a, b, strict=True):
        first, second = accepted(x), accepted(y)
        if first is not None and second is not None:
            found.append((first, second))
    return found


def cohen_kappa(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Cohen's kappa of the verdicts of two judges over the questions both judged
    (``a`` and ``b`` aligned by question); ``None`` where undefined."""
    pairs = _pairs(a, b)
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(x == y for x, y in pairs) / n
    first = sum(x for x, _ in pairs) / n
    second = sum(y for _, y in pairs) / n
    chance = first * second + (1 - first) * (1 - second)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def fleiss_kappa_of_counts(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from ``counts[i][j]``: how many raters put subject ``i`` in category
    ``j`` (every subject rated by the same number of raters, at least two); ``None``
    where undefined."""
    if not counts:
        return None
    raters = sum(counts[0])
    if raters < 2 or any(sum(row) != raters for row in counts):
        raise ValueError("every subject needs the same number of raters, at least two")
    subjects = len(counts)
    categories = len(counts[0])
    shares = [sum(row[j] for row in counts) / (subjects * raters) for j in range(categories)]
    agreement = [(sum(c * c for c in row) - raters) / (raters * (raters - 1)) for row in counts]
    mean = sum(agreement) / subjects
    chance = sum(p * p for p in shares)
    if chance >= 1:
        return None
    return (mean - chance) / (1 - chance)


def fleiss_kappa(judges: Sequence[Sequence[float]]) -> float | None:
    """Fleiss' kappa of the verdicts of two or more judges (each a sequence of scores
    aligned by question) over the questions every judge judged; ``None`` where undefined."""
    if len(judges) < 2:
        raise ValueError(f"Fleiss' kappa needs two judges or more, got {len(judges)}")
    if len({len(scores) for scores in judges}) != 1:
        raise ValueError("the judges scored different numbers of questions: align them first")
    counts = []
    for column in zip(*judges, strict=True):
        verdicts = [accepted(score) for score in column]
        if None not in verdicts:
            yes = sum(bool(v) for v in verdicts)
            counts.append([yes, len(verdicts) - yes])
    return fleiss_kappa_of_counts(counts)


def one_sided(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The share of the questions both judged that ``a`` accepts and ``b`` rejects
    (``None`` when none was judged by both)."""
    pairs = _pairs(a, b)
    if not pairs:
        return None
    return sum(x and not y for x, y in pairs) / len(pairs)


@dataclass(frozen=True)
class RankFlips:
    """Whether run B beats run A under every judge.

    ``differences``: per judge, B's mean score minus A's over the questions that judge
    scored in both (``None``: none); ``holds``: whether every judge's difference has
    the same sign (all above zero, or all below; a zero or a missing one does not
    hold); ``flip_rate``: the share of ``resamples`` paired bootstrap resamples of the
    questions in which the judges' differences do not all share one sign (a tie under
    one judge counts); ``winner_change_rate``: the share in which one judge's difference
    is above zero and another's below, the winner itself changing with the judge (a tie
    counts for neither; so a judge that accepts nothing, tied in every resample, raises
    the first rate to 1 and leaves this one to the others)."""

    differences: Mapping[str, float | None]
    holds: bool
    flip_rate: float | None
    winner_change_rate: float | None
    resamples: int


def _signs_agree(values: Sequence[float]) -> bool:
    return all(v > 0 for v in values) or all(v < 0 for v in values)


def rank_flips(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> RankFlips:
    """:class:`RankFlips` of run B (``b``) over run A (``a``): the same judges' scores by
    judge id, aligned by question (row ``i`` of every sequence is the same question).
    Needs numpy (the ``stats`` extra); deterministic for a given ``seed``."""
    np = require("numpy", extra="stats", purpose="the rank-flip rate under the paired bootstrap")
    if set(a) != set(b) or not a:
        raise ValueError("rank flips need the same judges, at least one, for both runs")
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be between 1 and {MAX_RESAMPLES:,}, got {resamples}")
    names = list(a)
    left = np.asarray([a[name] for name in names], dtype=float).T  # questions x judges
    right = np.asarray([b[name] for name in names], dtype=float).T
    if left.shape != right.shape:
        raise ValueError(f"the runs hold {left.shape[0]} and {right.shape[0]} questions")
    valid = ~np.isnan(left) & ~np.isnan(right)
    diff = np.where(valid, right - left, 0.0)
    mask = valid.astype(float)
    counted = mask.sum(axis=0)
    observed: dict[str, float | None] = {
        name: None if counted[j] == 0 else float(diff[:, j].sum() / counted[j])
        for j, name in enumerate(names)
    }
    values = list(observed.values())
    holds = None not in values and _signs_agree([v for v in values if v is not None])
    if not (counted > 0).all():
        return RankFlips(observed, holds, None, None, resamples)
    rng = np.random.default_rng(seed)
    flips = changes = 0
    for weights in bootstrap_weights(np, rng, resamples, left.shape[0]):
        both = weights @ np.hstack([diff, mask])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = both[:, : len(names)] / both[:, len(names) :]
        above, below = means > 0, means < 0
        flips += int((~(above.all(axis=1) | below.all(axis=1))).sum())
        changes += int((above.any(axis=1) & below.any(axis=1)).sum())
    return RankFlips(observed, holds, flips / resamples, changes / resamples, resamples)

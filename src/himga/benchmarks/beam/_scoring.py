"""BEAM's answer scores, as ``src/evaluation`` of mohammadtavakoli78/BEAM computes them.

Pure functions over the judge's verdicts; :mod:`himga.benchmarks.beam._judge`
asks the questions. Pinned to commit ``b2a3ee8ba12d68f83143dda191097dc3e028ddd3``:

* nine question types: each rubric item is judged 1 / 0.5 / 0 and the question
  scores their mean (``compute_metrics.evaluate_*``). The official code adds
  ``int(score)``, which turns every 0.5 into 0 (:func:`rubric_score` with
  ``official=True``).
* ``event_ordering``: the answer's lines are aligned to the rubric's ordered items
  (an LLM says which line describes which item, first match wins), and the
  question scores the normalised Kendall tau-b between the two orders,
  ``(tau_b + 1) / 2`` (``event_ordering_score``'s ``tau_norm``, the value
  ``report_results.py`` averages).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["align", "event_ordering_tau", "kendall_tau_b", "rubric_score"]


def rubric_score(verdicts: Sequence[float], *, official: bool = False) -> float:
    """The mean of the rubric items' verdicts (each 1, 0.5 or 0).

    ``official=True`` truncates each verdict with ``int`` first, as the official
    script does for every type but event ordering: a 0.5 counts 0. ``ValueError``
    without verdicts (a question without rubric items has no score).
    """
    if not verdicts:
        raise ValueError("no rubric verdicts to average")
    values = [float(int(v)) if official else v for v in verdicts]
    return math.fsum(values) / len(values)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired rankings; ``None`` where it is undefined.

    The statistic of ``scipy.stats.kendalltau(x, y, variant="b")``:
    ``(concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y))`` over the
    ``n0`` pairs, a pair tied in both counted in both tie counts. Undefined (scipy
    returns NaN) with fewer than two items or when either ranking is constant.
    """
    if len(x) != len(y):
        raise ValueError(f"rankings of different lengths: {len(x)} and {len(y)}")
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i] - x[j]
            dy = y[i] - y[j]
            if dx == 0:
                ties_x += 1
            if dy == 0:
                ties_y += 1
            if dx and dy:
                if (dx > 0) == (dy > 0):
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    denominator = (pairs - ties_x) * (pairs - ties_y)
    if denominator == 0:
        return None
    return (concordant - discordant) / math.sqrt(denominator)


def align(
    reference: Sequence[str], system: Sequence[str], equivalent: Callable[[int, int], bool]
) -> list[str]:
    """The system items, each replaced by the first unused reference item it matches.

    ``equivalent(i, j)`` says whether reference item ``i`` and system item ``j``
    describe the same event. As ``align_with_llm``: system items in order, each
    tried against the reference items not yet matched, in order; the first match
    wins and is used up. An unmatched system item stays as it is.
    """
    used: set[int] = set()
    aligned: list[str] = []
    for j, item in enumerate(system):
        match = next((i for i in range(len(reference)) if i not in used and equivalent(i, j)), None)
        if match is None:
            aligned.append(item)
        else:
            used.add(match)
            aligned.append(reference[match])
    return aligned


def event_ordering_tau(reference: Sequence[str], aligned: Sequence[str]) -> float:
    """``(tau_b + 1) / 2`` between the reference order and the aligned system order.

    As ``event_ordering_score``: both lists are ranked over their union (in
    first-seen order, reference first); an item's rank is its last position + 1
    in a list, ``len(union) + 1`` where the list lacks it. Where tau-b is
    undefined (one ranking constant, e.g. a one-item union) the official code
    yields NaN; here the score is 1.0 if ``aligned`` equals ``reference`` and 0.0
    otherwise.
    """
    union = list(dict.fromkeys([*reference, *aligned]))
    absent = len(union) + 1

    def ranks(items: Sequence[str]) -> list[float]:
        position = {item: index + 1 for index, item in enumerate(items)}
        return [float(position.get(item, absent)) for item in union]

    tau = kendall_tau_b(ranks(reference), ranks(aligned))
    if tau is None:
        return 1.0 if list(aligned) == list(reference) else 0.0
    return (tau + 1) / 2

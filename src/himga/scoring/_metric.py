"""What a metric is: :class:`Metric` (one value per question, aggregated per category)
and :class:`RunMetric` (one JSON block over a whole run)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from himga._json import JSONValue
    from himga.scoring._result import EvalResult

__all__ = ["Metric", "MetricNeed", "RunMetric", "mean", "percentile"]

MetricNeed = Literal["prediction", "judge", "context", "ranking", "retrieval"]
"""What a question must have for a metric to be scored on it, each with its count in
every block of :func:`~himga.eval.compute_metrics`: ``"prediction"`` an answer and no
LLM error (``answered``), ``"judge"`` a judge score (``judged``), ``"context"`` an
evidence turn with a text (``with_evidence``), ``"ranking"`` a ranking from ``search``
and evidence turns (``ranked``); ``"retrieval"`` nothing but a retrieval that did not fail
(no count: such metrics are measurements, see :attr:`Metric.recorded`)."""


def mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean; ``None`` for no values."""
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0 to 100), linear between the closest ranks (numpy's
    default); ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Metric:
    """A per-question metric, defined once.

    ``name`` is its key in :func:`~himga.eval.question_scores` and in every block of
    :func:`~himga.eval.compute_metrics`; ``title`` its column title (``"R@10"``).
    ``score(result, judge)`` is the question's value (``judge`` is its judge score,
    ``None`` if not judged), ``None`` where the metric does not apply; it is only
    asked of questions that have what ``needs`` says and no memory error. A block's
    value is ``aggregate`` of its questions' values (the mean by default), ``None``
    with none. ``in_table``: a column of ``himga eval``'s table (when any row has a
    value).
    """

    name: str
    title: str
    needs: MetricNeed
    score: Callable[[EvalResult, float | None], float | None]
    higher_is_better: bool = True
    in_table: bool = False
    description: str = ""
    aggregate: Callable[[Sequence[float]], float | None] = mean
    decimals: int = 3
    recorded: bool = True

    def __post_init__(self) -> None:
        # A plug-in's metric is refused where it is made, in one line, not when a
        # run's table is printed.
        members: tuple[tuple[str, object], ...] = (("name", self.name), ("title", self.title))
        for member, value in members:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"metric {self.name!r}: {member} {value!r} is not a non-empty str")
        if self.needs not in get_args(MetricNeed):
            known = ", ".join(get_args(MetricNeed))
            raise ValueError(f"metric {self.name!r}: unknown kind needs={self.needs!r} ({known})")
        if not callable(self.score) or not callable(self.aggregate):
            raise ValueError(f"metric {self.name!r}: score and aggregate must be callable")


@dataclass(frozen=True)
class RunMetric:
    """A metric computed over a run as a whole, written under key ``name`` of metrics.json.

    ``compute`` gets the run's results of the benchmark that contributes it (those
    without a memory error) and returns a JSON-ready block, or ``None`` when it has
    nothing to report (then the key is left out).
    """

    name: str
    description: str
    compute: Callable[[Sequence[EvalResult]], JSONValue | None]

"""A run's progress as it is: turns to ingest and questions to finish, each weighted by
its measured rate, so a long ingest moves the bar and the ETA counts it."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from tqdm import tqdm

__all__ = ["ProgressBar", "ProgressModel", "ProgressState"]

#: Steps of the bar (a permille) and the least seconds between two redraws.
_STEPS = 1000
_REDRAW_S = 0.2
#: tqdm's own rate and ETA count bar steps, not work: the text after the bar is ours.
_FORMAT = "{{desc}}: {{percentage:3.0f}}%|{{bar}}| {text}"


@dataclass(frozen=True)
class ProgressState:
    """What is done and left. ``fraction`` of the work done (by measured cost once both
    rates are known, by count before; ``None`` without totals) and ``eta_s``, the
    seconds the remaining work takes at the measured rates (``None`` until every kind
    of work left has been measured)."""

    turns_done: int
    turns_total: int | None
    questions_done: int
    questions_total: int | None
    fraction: float | None
    eta_s: float | None


class ProgressModel:
    """Counts a run's work, and its cost per turn ingested and per question finished.

    ``turns`` and ``questions`` are the run's totals (``None``: unknown, e.g. samples
    from a generator); :meth:`skip` removes what a resumed run will not redo. The
    cost of a turn is the ingest time over the turns ingested; that of a question the
    rest of the busy time (wall time times ``parallelism``, the workers running at
    once) over the questions finished: answers overlap ingest, so only the sum is
    measured, not a per-question latency. Thread-safe; ``clock`` is for tests.
    """

    def __init__(
        self,
        *,
        turns: int | None,
        questions: int | None,
        parallelism: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._start = clock()
        self._mark = self._start
        self._parallelism = parallelism
        self._turns_total = turns
        self._questions_total = questions
        self._turns = 0
        self._questions = 0
        self._ingest_s = 0.0
        self._sample_left = 0

    def skip(self, *, turns: int = 0, questions: int = 0) -> None:
        """Take work a resumed run does not do off the totals."""
        with self._lock:
            if self._turns_total is not None:
                self._turns_total -= turns
            if self._questions_total is not None:
                self._questions_total -= questions

    def ingest_starts(self, turns: int) -> None:
        """A sample of ``turns`` starts its ingest now: the next :meth:`ingested` is
        timed from here."""
        with self._lock:
            self._mark = self._clock()
            self._sample_left = turns

    def ingest_ends(self) -> None:
        """The sample's ingest ended: turns it did not ingest (a memory error stopped it)
        are no longer work."""
        with self._lock:
            if self._turns_total is not None:
                self._turns_total -= self._sample_left
            self._sample_left = 0

    def ingested(self, turns: int = 1, seconds: float | None = None) -> None:
        """``turns`` more were ingested in ``seconds`` (default: since the last call or
        :meth:`ingest_starts`)."""
        with self._lock:
            now = self._clock()
            self._ingest_s += now - self._mark if seconds is None else seconds
            self._mark = now
            self._turns += turns
            self._sample_left = max(self._sample_left - turns, 0)

    def finished(self, questions: int = 1) -> None:
        """``questions`` more were finished (answered, or retrieved offline, or failed)."""
        with self._lock:
            self._questions += questions

    def state(self) -> ProgressState:
        """The counts, the fraction done and the ETA now."""
        with self._lock:
            busy = (self._clock() - self._start) * self._parallelism
            turns, questions = self._turns, self._questions
            turns_total, questions_total = self._turns_total, self._questions_total
            per_turn = self._ingest_s / turns if turns else None
            per_question = max(busy - self._ingest_s, 0.0) / questions if questions else None
        if turns_total is None or questions_total is None:
            return ProgressState(turns, turns_total, questions, questions_total, None, None)
        turns_left = max(turns_total - turns, 0)
        questions_left = max(questions_total - questions, 0)
        eta = None
        if (per_turn is not None or not turns_left) and (
            per_question is not None or not questions_left
        ):
            left = turns_left * (per_turn or 0.0) + questions_left * (per_question or 0.0)
            eta = left / self._parallelism
        if per_turn is not None and per_question is not None:
            done = turns * per_turn + questions * per_question
            whole = done + turns_left * per_turn + questions_left * per_question
        else:  # a rate not measured yet: each turn and question counts one
            done, whole = float(turns + questions), float(turns_total + questions_total)
        fraction = done / whole if whole > 0 else 1.0
        return ProgressState(turns, turns_total, questions, questions_total, fraction, eta)


def _count(done: int, total: int | None) -> str:
    return f"{done:,}" if total is None else f"{done:,}/{total:,}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def describe(state: ProgressState) -> str:
    """The bar's text after the bar: each count and the ETA."""
    return (
        f"turns {_count(state.turns_done, state.turns_total)} · questions "
        f"{_count(state.questions_done, state.questions_total)} · ETA {_duration(state.eta_s)}"
    )


class ProgressBar:
    """A :class:`ProgressModel` drawn on ``stream`` (default stderr), at most every
    0.2 s; nothing at all unless ``enabled`` and ``stream`` is a terminal (a log file
    or a pipe gets no bar)."""

    def __init__(
        self,
        model: ProgressModel,
        *,
        enabled: bool,
        description: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        out = stream or sys.stderr
        self._clock = clock
        self._last = -_REDRAW_S
        self._lock = threading.Lock()
        self._bar = (
            tqdm(
                total=_STEPS,
                desc=description,
                file=out,
                bar_format=_FORMAT.format(text=""),
            )
            if enabled and out.isatty()
            else None
        )
        self._draw(force=True)

    def ingest_starts(self, turns: int) -> None:
        """See :meth:`ProgressModel.ingest_starts`."""
        self.model.ingest_starts(turns)

    def ingest_ends(self) -> None:
        """See :meth:`ProgressModel.ingest_ends`."""
        self.model.ingest_ends()

    def ingested(self, turns: int = 1, seconds: float | None = None) -> None:
        """See :meth:`ProgressModel.ingested`; redraws."""
        self.model.ingested(turns, seconds)
        self._draw()

    def finished(self, questions: int = 1) -> None:
        """See :meth:`ProgressModel.finished`; redraws."""
        self.model.finished(questions)
        self._draw()

    def skip(self, *, turns: int = 0, questions: int = 0) -> None:
        """See :meth:`ProgressModel.skip`."""
        self.model.skip(turns=turns, questions=questions)

    def _draw(self, force: bool = False) -> None:
        if self._bar is None:
            return
        with self._lock:
            now = self._clock()
            if not force and now - self._last < _REDRAW_S:
                return
            self._last = now
            state = self.model.state()
            self._bar.n = round((state.fraction or 0.0) * _STEPS)
            self._bar.bar_format = _FORMAT.format(text=describe(state))
            self._bar.refresh()

    def close(self) -> None:
        """Draw the last state and end the bar (idempotent)."""
        if self._bar is not None:
            self._draw(force=True)
            self._bar.close()
            self._bar = None

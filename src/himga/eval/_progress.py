"""A run's progress as it is: turns to ingest, passages to embed and questions to finish,
each weighted by its measured rate, so a long ingest or embedding moves the bar and the
ETA counts it."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO

from tqdm import tqdm

__all__ = ["ProgressBar", "ProgressModel", "ProgressObserver", "ProgressState"]

#: Steps of the bar (a permille) and the least seconds between two redraws.
_STEPS = 1000
_REDRAW_S = 0.2
#: tqdm's own rate and ETA count bar steps, not work: the text after the bar is ours.
_FORMAT = "{{desc}}: {{percentage:3.0f}}%|{{bar}}| {text}"


@dataclass(frozen=True)
class ProgressState:
    """What is done and left. ``fraction`` of the work done (by measured cost once every
    kind of work has a rate, by count before; ``None`` without totals) and ``eta_s``, the
    seconds the remaining work takes at the measured rates (``None`` until every kind
    of work left has been measured). ``embeds_*``: passages a memory that embeds has
    embedded (0 of 0 for one that does not)."""

    turns_done: int
    turns_total: int | None
    questions_done: int
    questions_total: int | None
    fraction: float | None
    eta_s: float | None
    embeds_done: int = 0
    embeds_total: int | None = 0


class ProgressObserver(Protocol):
    """Told each piece of work as it is done, with the seconds it took (a Ray worker's
    reporter, which forwards it to the driver's bar)."""

    def ingested(self, turns: int, seconds: float, /) -> None:
        """``turns`` more were ingested, in ``seconds``."""
        ...

    def embedded(self, passages: int, seconds: float, /) -> None:
        """``passages`` more were embedded, in ``seconds``."""
        ...

    def finished(self, questions: int, /) -> None:
        """``questions`` more were finished."""
        ...


class _Work:
    """One kind of work: how much is done, of what total (``None``: unknown), and in
    how many seconds (measured kinds only)."""

    __slots__ = ("done", "seconds", "total")

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.done = 0
        self.seconds = 0.0

    def left(self) -> int:
        return 0 if self.total is None else max(self.total - self.done, 0)

    def drop(self, count: int) -> None:
        if self.total is not None:
            self.total -= count


class ProgressModel:
    """Counts a run's work, and its cost per turn ingested, per passage embedded and per
    question finished.

    ``turns``, ``questions`` and ``embeds`` are the run's totals (``None``: unknown, e.g.
    samples from a generator; ``embeds`` is 0 unless the memory reports its embedding:
    then one passage per turn); :meth:`skip` removes what a resumed run will not redo.
    The cost of a turn is the ingest time over the turns ingested, that of a passage
    the embedding time over the passages embedded; that of a question the rest of the
    busy time (wall time times ``parallelism``, the workers running at once) over the
    questions finished: answers overlap ingest, so only the sum is measured, not a
    per-question latency. Thread-safe; ``clock`` is for tests.
    """

    def __init__(
        self,
        *,
        turns: int | None,
        questions: int | None,
        embeds: int | None = 0,
        parallelism: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._start = clock()
        self._mark = self._start
        self._embedding_since_mark = 0.0
        self._parallelism = parallelism
        self._turns = _Work(turns)
        self._embeds = _Work(embeds)
        self._questions = _Work(questions)
        self._sample_turns = 0
        self._sample_embeds = 0

    def skip(self, *, turns: int = 0, questions: int = 0, embeds: int | None = None) -> None:
        """Take work a resumed run does not do off the totals (``embeds``: by default
        one per skipped turn when the run embeds)."""
        with self._lock:
            self._turns.drop(turns)
            self._questions.drop(questions)
            if self._embeds.total:
                self._embeds.drop(turns if embeds is None else embeds)

    def ingest_starts(self, turns: int) -> None:
        """A sample of ``turns`` starts its ingest now: the next :meth:`ingested` is
        timed from here."""
        with self._lock:
            self._mark = self._clock()
            self._embedding_since_mark = 0.0
            self._sample_turns = turns
            self._sample_embeds = turns if self._embeds.total else 0

    def ingest_ends(self) -> None:
        """The sample's ingest ended: turns it did not ingest (a memory error stopped it)
        are no longer work."""
        with self._lock:
            self._turns.drop(self._sample_turns)
            self._sample_turns = 0

    def sample_ends(self) -> None:
        """The sample's questions are retrieved: passages it did not embed (an error, or
        a memory that embeds fewer) are no longer work."""
        with self._lock:
            self._embeds.drop(self._sample_embeds)
            self._sample_embeds = 0

    def ingested(self, turns: int = 1, seconds: float | None = None) -> float:
        """``turns`` more were ingested in ``seconds`` (default: since the last call or
        :meth:`ingest_starts`, less what was embedding meanwhile); returns the seconds
        counted."""
        with self._lock:
            now = self._clock()
            if seconds is None:
                seconds = max(now - self._mark - self._embedding_since_mark, 0.0)
            self._mark, self._embedding_since_mark = now, 0.0
            self._turns.seconds += seconds
            self._turns.done += turns
            self._sample_turns = max(self._sample_turns - turns, 0)
            return seconds

    def embedded(self, passages: int, seconds: float) -> None:
        """``passages`` more were embedded in ``seconds`` (during an ingest, those seconds
        are not the turns')."""
        with self._lock:
            self._embeds.done += passages
            self._embeds.seconds += seconds
            self._embedding_since_mark += seconds
            self._sample_embeds = max(self._sample_embeds - passages, 0)

    def finished(self, questions: int = 1) -> None:
        """``questions`` more were finished (answered, or retrieved offline, or failed)."""
        with self._lock:
            self._questions.done += questions

    def state(self) -> ProgressState:
        """The counts, the fraction done and the ETA now."""
        with self._lock:
            busy = (self._clock() - self._start) * self._parallelism
            kinds = (self._turns, self._embeds, self._questions)
            done = [kind.done for kind in kinds]
            totals = [kind.total for kind in kinds]
            left = [kind.left() for kind in kinds]
            measured = self._turns.seconds + self._embeds.seconds
            rates = [
                self._turns.seconds / done[0] if done[0] else None,
                self._embeds.seconds / done[1] if done[1] else None,
                max(busy - measured, 0.0) / done[2] if done[2] else None,
            ]
        shown = (done[0], totals[0], done[2], totals[2])
        if any(total is None for total in totals):
            return ProgressState(*shown, None, None, done[1], totals[1])
        eta = None
        if all(rate is not None or not count for rate, count in zip(rates, left, strict=True)):
            eta = sum(count * (rate or 0.0) for rate, count in zip(rates, left, strict=True))
            eta /= self._parallelism
        # Only the kinds of work this run has (a run that embeds nothing has no embed rate).
        present = [i for i in range(3) if done[i] or totals[i]]
        spent = whole = 0.0
        if all(rates[i] is not None for i in present):
            spent = sum(done[i] * (rates[i] or 0.0) for i in present)
            whole = spent + sum(left[i] * (rates[i] or 0.0) for i in present)
        if whole <= 0:  # a rate not measured yet (or all zero): each piece of work counts one
            spent = float(sum(done[i] for i in present))
            whole = spent + sum(left[i] for i in present)
        fraction = min(spent / whole, 1.0) if whole > 0 else 1.0
        return ProgressState(*shown, fraction, eta, done[1], totals[1])


def _count(done: int, total: int | None) -> str:
    return f"{done:,}" if total is None else f"{done:,}/{total:,}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def describe(state: ProgressState) -> str:
    """The bar's text after the bar: each count and the ETA (embeds only for a run
    that embeds)."""
    embeds = ""
    if state.embeds_done or state.embeds_total:
        embeds = f" · embeds {_count(state.embeds_done, state.embeds_total)}"
    return (
        f"turns {_count(state.turns_done, state.turns_total)}{embeds} · questions "
        f"{_count(state.questions_done, state.questions_total)} · ETA {_duration(state.eta_s)}"
    )


class ProgressBar:
    """A :class:`ProgressModel` drawn on ``stream`` (default stderr), at most every
    0.2 s; nothing at all unless ``enabled`` and ``stream`` is a terminal (a log file
    or a pipe gets no bar). Each piece of work is also told to ``observer``, if any,
    bar or no bar."""

    def __init__(
        self,
        model: ProgressModel,
        *,
        enabled: bool,
        description: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        observer: ProgressObserver | None = None,
    ) -> None:
        self.model = model
        self._observer = observer
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

    def sample_ends(self) -> None:
        """See :meth:`ProgressModel.sample_ends`."""
        self.model.sample_ends()

    def ingested(self, turns: int = 1, seconds: float | None = None) -> None:
        """See :meth:`ProgressModel.ingested`; redraws."""
        counted = self.model.ingested(turns, seconds)
        if self._observer is not None:
            self._observer.ingested(turns, counted)
        self._draw()

    def embedded(self, passages: int, seconds: float) -> None:
        """See :meth:`ProgressModel.embedded`; redraws."""
        self.model.embedded(passages, seconds)
        if self._observer is not None:
            self._observer.embedded(passages, seconds)
        self._draw()

    def finished(self, questions: int = 1) -> None:
        """See :meth:`ProgressModel.finished`; redraws."""
        self.model.finished(questions)
        if self._observer is not None:
            self._observer.finished(questions)
        self._draw()

    def skip(self, *, turns: int = 0, questions: int = 0, embeds: int | None = None) -> None:
        """See :meth:`ProgressModel.skip`."""
        self.model.skip(turns=turns, questions=questions, embeds=embeds)

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

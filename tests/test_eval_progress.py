"""The run's progress: turns and questions, ETA from measured rates, no bar off a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.eval import _ledger as ledger_module
from himga.eval import run_eval
from himga.eval._progress import ProgressBar, ProgressModel
from himga.memory import FullContextMemory
from tests.test_eval_support import make_sample


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_eta_is_the_remaining_work_at_the_measured_rates() -> None:
    clock = Clock()
    model = ProgressModel(turns=1_000, questions=100, clock=clock)
    model.ingest_starts(500)
    clock.now += 50.0
    model.ingested(500)  # 0.1 s a turn
    clock.now += 20.0
    model.finished(10)  # the other 20 s over 10 questions: 2 s a question
    state = model.state()
    assert (state.turns_done, state.questions_done) == (500, 10)
    assert state.eta_s == pytest.approx(500 * 0.1 + 90 * 2.0)
    assert state.fraction == pytest.approx(70 / (70 + 50 + 180))


def test_a_long_ingest_moves_the_bar_before_any_question_is_answered() -> None:
    clock = Clock()
    model = ProgressModel(turns=1_000, questions=100, clock=clock)
    model.ingest_starts(1_000)
    for _ in range(300):
        clock.now += 2.0
        model.ingested()
    state = model.state()
    assert state.turns_done == 300
    assert state.fraction == pytest.approx(300 / 1_100)  # by count until a question is timed
    assert state.eta_s is None  # no question timed: no ETA rather than a wrong one


def test_parallel_workers_divide_the_eta_and_skipped_work_is_not_left() -> None:
    clock = Clock()
    model = ProgressModel(turns=100, questions=40, parallelism=2, clock=clock)
    model.skip(turns=20, questions=10)  # resumed: neither ingested again nor answered
    clock.now += 10.0
    model.ingested(40, seconds=16.0)  # two workers: 20 busy seconds, 16 of them ingesting
    model.finished(10)
    state = model.state()
    assert (state.turns_total, state.questions_total) == (80, 30)
    assert state.eta_s == pytest.approx((40 * 0.4 + 20 * 0.4) / 2)
    model.ingest_starts(40)
    model.ingested(15)
    model.ingest_ends()  # a memory error stopped the ingest: 25 turns are no longer work
    assert model.state().turns_total == 55


def test_the_bar_shows_turns_questions_and_the_eta_on_a_terminal_only() -> None:
    clock = Clock()
    terminal = Terminal()
    model = ProgressModel(turns=1_000, questions=100, clock=clock)
    bar = ProgressBar(model, enabled=True, description="eval", stream=terminal, clock=clock)
    model.ingest_starts(1_000)
    clock.now += 30.0
    bar.ingested(300)
    bar.close()
    shown = terminal.getvalue()
    assert "27%" in shown  # 300 of 1,100 turns and questions
    assert "turns 300/1,000 · questions 0/100 · ETA ?" in shown
    for stream, enabled in ((io.StringIO(), True), (Terminal(), False)):
        quiet = ProgressBar(model, enabled=enabled, description="eval", stream=stream)
        quiet.ingested(10)
        quiet.close()
        assert stream.getvalue() == ""


def keep_progress_models(monkeypatch: pytest.MonkeyPatch) -> list[ProgressModel]:
    """The progress model of every run started from now on in this test, in order."""
    made: list[ProgressModel] = []

    class Kept(ProgressModel):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(ledger_module, "ProgressModel", Kept)
    return made


def test_a_run_counts_every_turn_and_question_and_prints_nothing_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    made = keep_progress_models(monkeypatch)
    samples = [make_sample("a", sessions=2, turns=3), make_sample("b", sessions=1, turns=4)]
    agent = BaseAgent(memory=FullContextMemory())
    run_eval(samples, agent=agent, show_progress=True, checkpoint=tmp_path / "c.jsonl")
    state = made[0].state()
    assert (state.turns_done, state.turns_total) == (10, 10)
    assert (state.questions_done, state.questions_total) == (6, 6)
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar

    run_eval(samples, agent=agent, show_progress=True, checkpoint=tmp_path / "c.jsonl")
    resumed = made[1].state()  # everything was done: nothing is left, nothing counted
    assert (resumed.turns_total, resumed.questions_total, resumed.fraction) == (0, 0, 1.0)

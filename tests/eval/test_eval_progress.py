"""The run's progress: turns and questions, ETA from measured rates, no bar off a terminal."""

from __future__ import annotations

import io
from pathlib import Path
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.agent import BaseAgent
from himga.eval import _ledger as ledger_module
from himga.eval import run_eval
from himga.eval._progress import ProgressBar, ProgressModel, describe
from himga.memory import FullContextMemory
from tests.eval.test_eval_support import make_sample


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


_KINDS = ("turn", "embed", "question")


@given(
    counts=st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
    costs=st.tuples(st.floats(0.01, 10.0), st.floats(0.01, 10.0), st.floats(0.01, 10.0)),
    seed=st.randoms(use_true_random=False),
)
def test_the_bar_only_moves_forward_at_steady_rates_and_ends_at_100_with_eta_0(
    counts: tuple[int, int, int], costs: tuple[float, float, float], seed: Random
) -> None:
    # Work done piece by piece, in any interleaving, each kind at a steady cost: the ETA
    # is the remaining work at those costs, exactly; the fraction stays in [0, 1], never
    # goes back while one way of counting holds (by count until every kind is measured,
    # by cost after), and the run ends at 1.0 with an ETA of 0.
    clock = Clock()
    turns, embeds, questions = counts
    model = ProgressModel(turns=turns, questions=questions, embeds=embeds, clock=clock)
    pieces = [kind for kind, count in zip(_KINDS, counts, strict=True) for _ in range(count)]
    seed.shuffle(pieces)
    done = dict.fromkeys(_KINDS, 0)
    last: tuple[bool, float] | None = None
    for kind in pieces:
        cost = costs[_KINDS.index(kind)]
        clock.now += cost
        if kind == "turn":
            model.ingested(1, seconds=cost)
        elif kind == "embed":
            model.embedded(1, cost)
        else:
            model.finished(1)
        done[kind] += 1
        state = model.state()
        assert state.fraction is not None
        assert 0.0 <= state.fraction <= 1.0
        left = [count - done[kind] for kind, count in zip(_KINDS, counts, strict=True)]
        measured = all(done[k] or not count for k, count in zip(_KINDS, counts, strict=True))
        if state.eta_s is not None:
            exact = sum(n * c for n, c in zip(left, costs, strict=True))
            assert state.eta_s == pytest.approx(exact, rel=1e-6, abs=1e-6)
        if last is not None and last[0] == measured:
            assert state.fraction >= last[1] - 1e-9
        last = (measured, state.fraction)
    final = model.state()
    assert (final.turns_done, final.embeds_done, final.questions_done) == counts
    assert (final.fraction, final.eta_s) == (1.0, 0.0)


def test_a_dense_memory_s_embedding_moves_the_bar_before_its_questions_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("numpy")
    from himga.embed import HashEmbedder
    from himga.memory import DenseMemory

    made = keep_progress_models(monkeypatch)
    events: list[tuple[str, int]] = []

    class Observer:
        def ingested(self, turns: int, seconds: float, /) -> None:
            events.append(("turns", turns))

        def embedded(self, passages: int, seconds: float, /) -> None:
            assert seconds >= 0
            events.append(("embeds", passages))

        def finished(self, questions: int, /) -> None:
            events.append(("questions", questions))

    samples = [make_sample("a", sessions=2, turns=3), make_sample("b", sessions=1, turns=4)]
    agent = BaseAgent(memory=DenseMemory(k=2, embedder=HashEmbedder(dim=32)))
    run_eval(samples, agent=agent, show_progress=False, progress_observer=Observer())
    state = made[0].state()
    assert (state.embeds_done, state.embeds_total) == (10, 10)  # one passage per turn
    assert (state.turns_done, state.questions_done, state.fraction) == (10, 6, 1.0)
    # Each sample: its turns, then all its passages in one batch (at the first query),
    # then its questions; the bar moved by 6 and 4 passages before their questions.
    kinds = [kind for kind, _ in events]
    assert (
        kinds
        == ["turns"] * 6
        + ["embeds"]
        + ["questions"] * 3
        + ["turns"] * 4
        + ["embeds"]
        + ["questions"] * 3
    )
    assert [n for kind, n in events if kind == "embeds"] == [6, 4]
    # the agent outlives the run: its memory reports to no one afterwards
    agent.memory.retrieve("topic0x1")
    agent.memory.reset()
    agent.memory.ingest(samples[0].sessions[0].messages[0], samples[0].sessions[0])
    agent.memory.retrieve("topic0x1")
    assert [n for kind, n in events if kind == "embeds"] == [6, 4]


def test_the_bar_shows_embeds_only_for_a_memory_that_embeds_and_stays_quiet_off_a_terminal() -> (
    None
):
    clock = Clock()
    terminal = Terminal()
    model = ProgressModel(turns=10, questions=2, embeds=10, clock=clock)
    bar = ProgressBar(model, enabled=True, description="eval", stream=terminal, clock=clock)
    bar.ingested(10, seconds=1.0)
    clock.now += 5.0
    bar.embedded(10, 4.0)
    bar.close()
    assert "turns 10/10 · embeds 10/10 · questions 0/2 · ETA ?" in terminal.getvalue()
    plain = ProgressModel(turns=10, questions=2, clock=clock)
    assert "embeds" not in describe(plain.state())
    told: list[int] = []

    class Counting:
        def ingested(self, turns: int, seconds: float, /) -> None:
            told.append(turns)

        def embedded(self, passages: int, seconds: float, /) -> None:
            told.append(passages)

        def finished(self, questions: int, /) -> None:
            told.append(questions)

    for stream, enabled in ((io.StringIO(), True), (Terminal(), False)):
        quiet = ProgressBar(
            model, enabled=enabled, description="eval", stream=stream, observer=Counting()
        )
        quiet.ingested(1, seconds=0.1)
        quiet.embedded(2, 0.1)
        quiet.finished(3)
        quiet.close()
        assert stream.getvalue() == ""  # --no-progress, or not a terminal: nothing drawn
    assert told == [1, 2, 3] * 2  # yet the observer (a Ray worker's reporter) is told

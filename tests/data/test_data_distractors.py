"""with_distractors: deterministic padding of haystacks, the gold untouched."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.data import Message, QAPair, Sample, Session, with_distractors
from himga.data.schema import Category


def _sample(index: int, sessions: int) -> Sample:
    haystack = [
        Session(
            f"q{index}-s{s}",
            [Message("user", f"q{index} s{s} t{t}", f"q{index}-s{s}:{t}") for t in range(2)],
            date=datetime(2023, 1 + s % 12, 1 + index % 28),
        )
        for s in range(sessions)
    ]
    qa = QAPair(
        f"q{index}",
        "?",
        "!",
        Category.MULTI_SESSION,
        evidence=[haystack[0].session_id],
        evidence_turns=[f"q{index}-s0:1"],
    )
    return Sample(f"q{index}", "longmemeval_oracle", haystack, [qa])


samples_strategy = st.lists(st.integers(1, 4), min_size=1, max_size=8).map(
    lambda sizes: [_sample(i, n) for i, n in enumerate(sizes)]
)


@given(samples_strategy, st.integers(0, 12), st.integers(0, 3))
def test_padding_laws(samples: list[Sample], sessions: int, seed: int) -> None:
    padded = with_distractors(samples, sessions=sessions, seed=seed)
    assert padded == with_distractors(samples, sessions=sessions, seed=seed)
    pool = {s.session_id for sample in samples for s in sample.sessions}
    for original, sample in zip(samples, padded, strict=True):
        assert sample.qa_pairs == original.qa_pairs  # the gold is the sample's own
        assert sample.dataset == "longmemeval_oracle+distractors"
        own = {s.session_id for s in original.sessions}
        ids = [s.session_id for s in sample.sessions]
        assert len(ids) == len(set(ids))
        assert own <= set(ids)
        drawn = [i.removeprefix("distractor-") for i in ids if i.startswith("distractor-")]
        assert set(drawn) <= pool - own
        expected = min(len(pool - own), max(0, sessions - len(original.sessions)))
        assert len(drawn) == expected == sample.metadata["distractor_sessions"]
        dates = [s.date for s in sample.sessions]
        assert dates == sorted(dates)  # type: ignore[type-var]
        turn_ids = [m.turn_id for _, m in sample.iter_turns()]
        assert len(turn_ids) == len(set(turn_ids))
        assert all(t is not None and t.rpartition(":")[0] in ids for t in turn_ids)


def test_a_samples_draw_does_not_depend_on_the_others_order() -> None:
    samples = [_sample(i, 2) for i in range(6)]
    forward = {s.sample_id: s for s in with_distractors(samples, sessions=5)}
    backward = {s.sample_id: s for s in with_distractors(samples[::-1], sessions=5)}
    assert forward == backward
    assert forward != {s.sample_id: s for s in with_distractors(samples, sessions=5, seed=1)}


def test_negative_sessions_is_an_error() -> None:
    with pytest.raises(ValueError, match="sessions"):
        with_distractors([], sessions=-1)

"""Haystacks padded with distractor sessions drawn from other samples, for retrieval evaluation."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from datetime import datetime

from himga.data.schema import Message, Sample, Session

__all__ = ["with_distractors"]


def with_distractors(
    samples: Sequence[Sample], *, sessions: int = 50, seed: int = 0
) -> list[Sample]:
    """Each sample with its haystack padded to ``sessions`` sessions from the others'.

    LongMemEval's oracle haystacks hold only evidence sessions, where any retriever
    scores near perfect; this builds a LongMemEval_S-like haystack (about 50
    sessions) from the same file. The pool is every session of ``samples``, ordered
    by session id (a repeated id is taken from the sample with the smallest
    ``sample_id``). A sample draws ``max(0, sessions - len(sample.sessions))``
    pool sessions whose ids it does not hold, uniformly without replacement from
    ``random.Random(f"{seed}/{sample_id}")``: the same samples and seed give the
    same haystacks, whatever their order. Drawn sessions are renamed
    ``"distractor-<id>"`` (turns ``"distractor-<id>:<index>"``) and the haystack is
    sorted by session date (undated sessions last, ties in their previous order).

    The gold is the sample's own: questions, answers and evidence are unchanged, so
    a distractor turn never counts as evidence, even if it happens to be relevant.
    ``dataset`` becomes ``"<dataset>+distractors"``; ``metadata`` records
    ``distractor_sessions`` and ``distractor_seed``.
    """
    if sessions < 0:
        raise ValueError(f"with_distractors: sessions must be >= 0, got {sessions}")
    pool: dict[str, Session] = {}
    # Sorted, so that neither the pool nor a draw depends on the order of ``samples``.
    for sample in sorted(samples, key=lambda sample: sample.sample_id):
        for session in sample.sessions:
            pool.setdefault(session.session_id, session)
    ordered = [pool[session_id] for session_id in sorted(pool)]
    padded = []
    for sample in samples:
        own = {session.session_id for session in sample.sessions}
        candidates = [session for session in ordered if session.session_id not in own]
        wanted = min(len(candidates), max(0, sessions - len(sample.sessions)))
        drawn = random.Random(f"{seed}/{sample.sample_id}").sample(candidates, wanted)
        haystack = [*sample.sessions, *map(_renamed, drawn)]
        haystack.sort(key=lambda s: (s.date is None, s.date or datetime.min))
        padded.append(
            dataclasses.replace(
                sample,
                dataset=f"{sample.dataset}+distractors",
                sessions=haystack,
                metadata={
                    **sample.metadata,
                    "distractor_sessions": wanted,
                    "distractor_seed": seed,
                },
            )
        )
    return padded


def _renamed(session: Session) -> Session:
    session_id = f"distractor-{session.session_id}"
    messages = [
        Message(message.role, message.content, f"{session_id}:{index}")
        for index, message in enumerate(session.messages)
    ]
    return dataclasses.replace(session, session_id=session_id, messages=messages)

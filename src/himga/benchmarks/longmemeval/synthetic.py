"""Generated LongMemEval files in the official layout, for tests and benchmarks.

No real LongMemEval file ships with himga. These files have the official
record layout (see ``docs/data.md``) and realistic sizes: the defaults of
:func:`write_longmemeval` give a LongMemEval_S-sized file (500 questions x 50
sessions x 10 turns of ~1,000 characters, about 280 MB). The text is
meaningless; only the shape is real.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from himga.benchmarks.longmemeval._loader import QUESTION_TYPES

__all__ = ["longmemeval_record", "write_longmemeval"]

_QUESTION_TYPES = tuple(QUESTION_TYPES)
_WORDS = [
    *("memory", "garden", "trip", "coffee", "recipe", "marathon", "budget", "guitar"),
    *("painting", "camera", "weekend", "project", "meeting", "doctor", "sister", "flight"),
    *("hotel", "museum", "novel", "piano"),
]
# Real haystacks are mostly ASCII with some accents, CJK and emoji: one sentence in 16 here.
_RARE = ["café", "naïve", "résumé", "über", "東京", "😊"]


def _sentence(i: int) -> str:
    words = _WORDS + _RARE if i % 16 == 0 else _WORDS
    length = random.Random(-i).randint(6, 24)
    return " ".join(random.Random(i).choices(words, k=length)).capitalize() + "."


_SENTENCES = tuple(_sentence(i) for i in range(512))
_START = datetime(2023, 1, 2, 9, 0)
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def longmemeval_record(
    rng: random.Random,
    index: int,
    *,
    sessions: int = 50,
    turns: int = 10,
    turn_chars: int = 1000,
) -> dict[str, Any]:
    """One LongMemEval question with its haystack, in the official layout.

    Every 16th question is an abstention question (``_abs``); one or two
    haystack sessions are answer sessions whose first user turn has
    ``has_answer: true`` (their other turns ``false``; other sessions' turns
    have no flag, as in the official files). Every 7th answer is an int.
    """
    question_id = f"q{index:05d}" + ("_abs" if index % 16 == 15 else "")
    answer_sessions = set(rng.sample(range(sessions), k=min(sessions, 1 + index % 2)))
    session_ids = [
        f"answer_{index:05d}_{s}" if s in answer_sessions else f"sharegpt_{index:05d}_{s}"
        for s in range(sessions)
    ]
    start = _START + timedelta(days=index % 300)
    dates = [start + timedelta(hours=7 * s, minutes=rng.randrange(60)) for s in range(sessions)]
    haystack = []
    for s in range(sessions):
        session: list[dict[str, Any]] = []
        for t in range(turns):
            text = ""
            while len(text) < turn_chars:
                text += rng.choice(_SENTENCES) + " "
            turn: dict[str, Any] = {"role": "user" if t % 2 == 0 else "assistant", "content": text}
            if s in answer_sessions:
                turn["has_answer"] = t == 0
            session.append(turn)
        haystack.append(session)
    return {
        "question_id": question_id,
        "question_type": _QUESTION_TYPES[index % len(_QUESTION_TYPES)],
        "question": f"What did I say about {rng.choice(_WORDS)} in question {index}?",
        "answer": index if index % 7 == 0 else f"the {rng.choice(_WORDS)}",
        "question_date": (dates[-1] + timedelta(days=3)).strftime(_DATE_FORMAT),
        "haystack_dates": [d.strftime(_DATE_FORMAT) for d in dates],
        "haystack_session_ids": session_ids,
        "haystack_sessions": haystack,
        "answer_session_ids": [session_ids[s] for s in sorted(answer_sessions)],
    }


def write_longmemeval(
    path: Path,
    *,
    questions: int = 500,
    sessions: int = 50,
    turns: int = 10,
    turn_chars: int = 1000,
    seed: int = 0,
) -> int:
    """Write a LongMemEval-layout JSON array to ``path``; returns its size in bytes.

    Records are written one at a time, so memory stays small whatever the size.
    Same arguments, same bytes.
    """
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("[")
        for index in range(questions):
            if index:
                handle.write(", ")
            record = longmemeval_record(
                rng, index, sessions=sessions, turns=turns, turn_chars=turn_chars
            )
            handle.write(json.dumps(record))
        handle.write("]")
    return path.stat().st_size

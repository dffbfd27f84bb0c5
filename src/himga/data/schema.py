"""The data model shared by loaders, memories, the agent and the evaluation.

All types are immutable value objects (frozen dataclasses; sequences are stored
as tuples whatever was passed in). The split between what a memory may see and
what it must not is part of the schema:

* :class:`Message` and :class:`Session` are conversation data -- everything on
  them may be ingested by a memory.
* :class:`QAPair` and :attr:`Sample.metadata` hold gold labels and auxiliary
  dataset fields (answers, evidence, LongMemEval ``has_answer`` turns, LoCoMo
  event summaries). They never travel with a ``Message`` or ``Session``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any

from himga.data._category import Category
from himga.data._dates import parse_session_date

__all__ = ["Category", "Message", "QAPair", "Sample", "Session", "plain_category"]


def plain_category(category: str) -> str:
    """``category`` as a plain ``str``: a str-enum member's value (an enum member hashes
    by its name, so it would not match its value in a set or as a dict key)."""
    value = category.value if isinstance(category, Enum) else category
    if not isinstance(value, str):
        raise TypeError(f"a category is a str, got {category!r}")
    return str(value)


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation.

    ``role`` is ``"user"`` / ``"assistant"`` (LongMemEval) or the speaker's name
    (LoCoMo, where both sides are people). ``turn_id`` identifies the turn within
    its sample (LoCoMo ``dia_id`` such as ``"D1:3"``; LongMemEval
    ``"<haystack_session_id>:<index>"`` with a 0-based index within the session)
    and is what evidence refers to. Gold labels (LongMemEval ``has_answer``) are
    never stored here: see ``QAPair.evidence_turns``.
    """

    role: str
    content: str
    turn_id: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    """An ordered run of messages that took place at one time.

    ``date_str`` keeps the benchmark's raw timestamp; ``date`` is its parsed
    value, filled from ``date_str`` when not given, ``None`` when unparseable.
    """

    session_id: str
    messages: Sequence[Message]
    date_str: str | None = None
    date: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.date is None and self.date_str is not None:
            object.__setattr__(self, "date", parse_session_date(self.date_str))


@dataclass(frozen=True, slots=True)
class QAPair:
    """A benchmark question with its gold answer and evidence (gold data).

    ``answer`` is always a string (integer answers are converted); for LoCoMo
    category 5 it is the file's ``adversarial_answer``, a distractor: the official
    scorer credits only saying the conversation does not tell (see ``adversarial``).
    ``evidence`` names what the answer rests on as the dataset does: turn ids for
    LoCoMo, session ids for LongMemEval. ``evidence_turns`` is always turn ids
    (LoCoMo: the repaired ``evidence``; LongMemEval: the ``has_answer`` turns),
    so turn-level retrieval metrics work on both. ``adversarial`` marks
    questions whose right answer is that the conversation does not say
    (LoCoMo category 5, LongMemEval ``_abs`` abstention questions).

    ``category`` is one of the benchmark's categories, a plain ``str`` (a str-enum
    member such as the compatibility :class:`Category` is stored as its value).
    ``gold`` holds benchmark-specific gold the judge reads (a rubric, an ordering, a
    cue), JSON-ready; empty for LoCoMo and LongMemEval.
    """

    question_id: str
    question: str
    answer: str
    category: str
    evidence: Sequence[str] = ()
    evidence_turns: Sequence[str] = ()
    adversarial: bool = False
    gold: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", plain_category(self.category))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "evidence_turns", tuple(self.evidence_turns))
        # A copy as a plain dict, not a read-only proxy: questions are pickled (Ray).
        object.__setattr__(self, "gold", dict(self.gold))


@dataclass(frozen=True, slots=True)
class Sample:
    """One benchmark unit: a conversation history and the questions asked about it.

    LoCoMo: one conversation (``speakers`` are its two people). LongMemEval: one
    question with its haystack (``question_date`` is when it is asked).
    ``metadata`` keeps auxiliary dataset fields (event summaries, ...) aside:
    nothing in it is ingested.
    """

    sample_id: str
    dataset: str
    sessions: Sequence[Session]
    qa_pairs: Sequence[QAPair] = ()
    speakers: Sequence[str] = ()
    question_date: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sessions", tuple(self.sessions))
        object.__setattr__(self, "qa_pairs", tuple(self.qa_pairs))
        object.__setattr__(self, "speakers", tuple(self.speakers))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __reduce__(self) -> tuple[type[Sample], tuple[Any, ...]]:
        # The read-only metadata proxy is not picklable; a plain copy is (Ray ships samples).
        return (
            Sample,
            (
                self.sample_id,
                self.dataset,
                self.sessions,
                self.qa_pairs,
                self.speakers,
                self.question_date,
                dict(self.metadata),
            ),
        )

    def iter_turns(self) -> Iterator[tuple[Session, Message]]:
        """Every message with its session, in conversation order."""
        for session in self.sessions:
            for message in session.messages:
                yield session, message

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

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from himga.data._dates import parse_session_date

__all__ = ["Category", "Message", "QAPair", "Sample", "Session"]


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


class Category(str, enum.Enum):
    """Question categories of both benchmarks.

    LoCoMo's integer codes follow the official scorer, ``task_eval/evaluation.py``
    of snap-research/locomo: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    5 adversarial. Some popular harnesses use a contradicting map (e.g. 1 = single-hop);
    numbers computed with it are not comparable with the paper's.
    """

    MULTI_HOP = "multi-hop"
    TEMPORAL = "temporal"
    OPEN_DOMAIN = "open-domain"
    SINGLE_HOP = "single-hop"
    ADVERSARIAL = "adversarial"
    SINGLE_SESSION_USER = "single-session-user"
    SINGLE_SESSION_ASSISTANT = "single-session-assistant"
    SINGLE_SESSION_PREFERENCE = "single-session-preference"
    MULTI_SESSION = "multi-session"
    KNOWLEDGE_UPDATE = "knowledge-update"
    TEMPORAL_REASONING = "temporal-reasoning"
    UNKNOWN = "unknown"

    @classmethod
    def from_locomo_code(cls, code: int) -> Category:
        """The category of an official LoCoMo integer code; ``ValueError`` if unknown."""
        try:
            return _LOCOMO_CODES[code]
        except KeyError:
            raise ValueError(f"unknown LoCoMo category code {code!r} (known: 1-5)") from None

    @property
    def locomo_code(self) -> int | None:
        """The official LoCoMo integer code, ``None`` for LongMemEval categories."""
        return _LOCOMO_NUMBERS.get(self)


_LOCOMO_CODES: dict[int, Category] = {
    1: Category.MULTI_HOP,
    2: Category.TEMPORAL,
    3: Category.OPEN_DOMAIN,
    4: Category.SINGLE_HOP,
    5: Category.ADVERSARIAL,
}
_LOCOMO_NUMBERS = {category: code for code, category in _LOCOMO_CODES.items()}


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
    """

    question_id: str
    question: str
    answer: str
    category: Category
    evidence: Sequence[str] = ()
    evidence_turns: Sequence[str] = ()
    adversarial: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "evidence_turns", tuple(self.evidence_turns))


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

    def iter_turns(self) -> Iterator[tuple[Session, Message]]:
        """Every message with its session, in conversation order."""
        for session in self.sessions:
            for message in session.messages:
                yield session, message

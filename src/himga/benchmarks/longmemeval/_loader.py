"""The LongMemEval loader: one question of the official files = one :class:`Sample`.

A record holds ``question_id``, ``question_type``, ``question``, ``answer``,
``question_date``, ``haystack_session_ids`` / ``haystack_dates`` /
``haystack_sessions`` (parallel lists) and ``answer_session_ids`` (optional: the
official scripts never read it). Turns are
``{"role", "content"}`` plus, on evidence sessions, the gold flag ``has_answer``,
which is moved to ``QAPair.evidence_turns`` and never reaches a ``Message``.

Turn ids are ``"<haystack_session_id>:<index>"``, ``index`` 0-based within the
session (``"answer_280352e9:0"``). A session id repeated within a record is
kept, its k-th copy renamed ``"<id>#<k>"`` (see ``unique_session_ids``).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Generator, Mapping
from pathlib import Path
from typing import Any

from himga.benchmarks.longmemeval._categories import CATEGORIES, UNKNOWN
from himga.data._errors import (
    DatasetError,
    DuplicateSessionWarning,
    EvidenceWarning,
    MissingEvidenceWarning,
    UnknownCategoryWarning,
)
from himga.data._fields import checked, kind_of
from himga.data._stream import iter_json_array
from himga.data.schema import Message, QAPair, Sample, Session

__all__ = ["QUESTION_TYPES", "iter_longmemeval"]

#: LongMemEval ``question_type`` -> category (the six types of the paper, as they are).
QUESTION_TYPES: Mapping[str, str] = {name: name for name in CATEGORIES if name != UNKNOWN}
ABSTENTION_SUFFIX = "_abs"
_RECORD_FIELDS = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)
_TURN_FIELDS = ("role", "content", "has_answer")


def iter_longmemeval(
    path: Path, dataset: str, ids: Collection[str] | None = None
) -> Generator[Sample, None, None]:
    """Stream the samples of a LongMemEval file with bounded memory.

    With ``ids``, records whose ``question_id`` is not in it are skipped without
    being validated. A question id seen twice is an error. Raises
    :class:`DatasetError` for malformed input; warns :class:`UnknownCategoryWarning`,
    :class:`EvidenceWarning`, :class:`DuplicateSessionWarning`.
    """
    seen: set[str] = set()
    for index, raw in iter_json_array(path):
        if ids is not None:
            question_id = raw.get("question_id") if isinstance(raw, dict) else None
            # Checked as a str first: a malformed id may be unhashable (a list, ...).
            if not (isinstance(question_id, str) and question_id in ids):
                continue
        sample = _Parser(str(path), index, raw).sample(dataset)
        if sample.sample_id in seen:
            raise DatasetError(
                path, "duplicate question id", sample=repr(sample.sample_id), field="question_id"
            )
        seen.add(sample.sample_id)
        yield sample


class _Parser:
    def __init__(self, file: str, index: int, raw: Any) -> None:
        self.file = file
        self.raw = raw
        self.sample_label = f"#{index}"
        if not isinstance(raw, dict):
            raise DatasetError(
                file, f"a record must be an object, found {kind_of(raw)}", sample=self.sample_label
            )
        question_id = raw.get("question_id")
        if isinstance(question_id, str):
            self.sample_label = repr(question_id)

    def error(self, field: str, problem: str) -> DatasetError:
        return DatasetError(self.file, problem, sample=self.sample_label, field=field)

    def get(
        self, mapping: Mapping[str, Any], key: str, kind: type | tuple[type, ...], field: str
    ) -> Any:
        return checked(self.error, mapping, key, kind, field)

    def strings(self, key: str) -> list[str]:
        values: list[str] = self.get(self.raw, key, list, key)
        for position, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f"{key}[{position}]", f"expected str, found {kind_of(value)}")
        return values

    def sample(self, dataset: str) -> Sample:
        raw = self.raw
        question_id = self.get(raw, "question_id", str, "question_id")
        question_type = self.get(raw, "question_type", str, "question_type")
        question = self.get(raw, "question", str, "question")
        answer = self.get(raw, "answer", (str, int), "answer")
        question_date = self.get(raw, "question_date", str, "question_date")
        session_ids = self.strings("haystack_session_ids")
        dates = self.strings("haystack_dates")
        if raw.get("answer_session_ids") is None:
            # The official scripts never read it (they find answer sessions by their ids):
            # the question is kept, its evidence turns from `has_answer`, warned once.
            warnings.warn(
                MissingEvidenceWarning(
                    f"{self.file}: sample {self.sample_label}: field 'answer_session_ids': missing"
                ),
                stacklevel=2,
            )
            answer_session_ids: list[str] = []
        else:
            answer_session_ids = self.strings("answer_session_ids")
        haystack = self.get(raw, "haystack_sessions", list, "haystack_sessions")
        for key, values in (("haystack_session_ids", session_ids), ("haystack_dates", dates)):
            if len(values) != len(haystack):
                raise self.error(
                    key,
                    f"has {len(values)} entries but haystack_sessions has {len(haystack)}",
                )
        unique_ids = self.unique_session_ids(session_ids)

        category = QUESTION_TYPES.get(question_type)
        if category is None:
            warnings.warn(
                UnknownCategoryWarning(
                    f"{self.file}: sample {self.sample_label}: field 'question_type': unknown "
                    f"type {question_type!r}; kept as category {UNKNOWN!r}"
                ),
                stacklevel=2,
            )
            category = UNKNOWN

        evidence_turns: list[str] = []
        turn_extras: dict[str, dict[str, Any]] = {}
        sessions = [
            self.session(position, session_id, date, turns, evidence_turns, turn_extras)
            for position, (session_id, date, turns) in enumerate(
                zip(unique_ids, dates, haystack, strict=True)
            )
        ]
        for session_id in answer_session_ids:
            if session_id not in session_ids:
                warnings.warn(
                    EvidenceWarning(
                        f"{self.file}: sample {self.sample_label}: question {question_id!r}: "
                        f"answer session {session_id!r} is not in the haystack; kept in evidence"
                    ),
                    stacklevel=2,
                )
        metadata: dict[str, Any] = {"question_type": question_type}
        metadata.update((k, v) for k, v in raw.items() if k not in _RECORD_FIELDS)
        if turn_extras:
            metadata["turn_extras"] = turn_extras
        qa = QAPair(
            question_id=question_id,
            question=question,
            answer=str(answer),
            category=category,
            evidence=answer_session_ids,
            evidence_turns=evidence_turns,
            adversarial=question_id.endswith(ABSTENTION_SUFFIX),
        )
        return Sample(
            sample_id=question_id,
            dataset=dataset,
            sessions=sessions,
            qa_pairs=[qa],
            question_date=question_date,
            metadata=metadata,
        )

    def unique_session_ids(self, session_ids: list[str]) -> list[str]:
        """The session ids, the k-th repeat of an id (k >= 2) renamed ``"<id>#<k>"``.

        LongMemEval_S (cleaned) repeats a filler session in 13 haystacks (same
        turns, another date). Both copies are kept, as the haystack has them;
        the rename keeps session and turn ids unique. Warns
        :class:`DuplicateSessionWarning`.
        """
        seen: dict[str, int] = {}
        unique: list[str] = []
        for position, session_id in enumerate(session_ids):
            count = seen[session_id] = seen.get(session_id, 0) + 1
            if count == 1:
                unique.append(session_id)
                continue
            renamed = f"{session_id}#{count}"
            unique.append(renamed)
            warnings.warn(
                DuplicateSessionWarning(
                    f"{self.file}: sample {self.sample_label}: field "
                    f"'haystack_session_ids[{position}]': session {session_id!r} appears "
                    f"{count} times; this copy is kept as session {renamed!r}"
                ),
                stacklevel=2,
            )
        if len(set(unique)) != len(unique):
            raise self.error(
                "haystack_session_ids",
                "session ids collide with the names given to repeated sessions ('<id>#<k>')",
            )
        return unique

    def turn_fields(self, field: str, turn: Any) -> tuple[str, str]:
        """``(role, content)`` of a turn, or the :class:`DatasetError` that says what is wrong."""
        if not isinstance(turn, dict):
            raise self.error(field, f"a turn must be an object, found {kind_of(turn)}")
        role = self.get(turn, "role", str, f"{field}.role")
        content = self.get(turn, "content", str, f"{field}.content")
        return role, content

    def session(
        self,
        position: int,
        session_id: str,
        date: str,
        turns: Any,
        evidence_turns: list[str],
        turn_extras: dict[str, dict[str, Any]],
    ) -> Session:
        field = f"haystack_sessions[{position}]"
        if not isinstance(turns, list):
            raise self.error(field, f"a session must be a list of turns, found {kind_of(turns)}")
        messages = []
        for index, turn in enumerate(turns):
            # The common case is checked inline (this loop runs per turn of 2.7 GB files);
            # anything unusual takes the slow path that names the field.
            role = turn.get("role") if type(turn) is dict else None
            content = turn.get("content") if type(turn) is dict else None
            if type(role) is not str or type(content) is not str:
                role, content = self.turn_fields(f"{field}[{index}]", turn)
            tid = f"{session_id}:{index}"
            if len(turn) > 2:
                flag = turn.get("has_answer")
                if flag is True:
                    evidence_turns.append(tid)
                elif flag is not False and "has_answer" in turn:
                    self.get(turn, "has_answer", bool, f"{field}[{index}].has_answer")
                extra = {k: v for k, v in turn.items() if k not in _TURN_FIELDS}
                if extra:
                    turn_extras[tid] = extra
            messages.append(Message(role=role, content=content, turn_id=tid))
        return Session(session_id=session_id, messages=messages, date_str=date)

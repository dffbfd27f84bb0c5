"""The BEAM loader: one conversation folder of the official layout = one :class:`Sample`.

A tier folder (``chats/100K`` of mohammadtavakoli78/BEAM) holds one folder per
conversation, named by its number, each with

* ``chat.json`` -- a list of batches ``{"batch_number", "turns", "time_anchor"}``,
  ``turns`` a list of lists of messages ``{"role", "id", "content", ...}``; the
  10M tier's file is a list of plans instead, ``[{"plan-1": [batch, ...]},
  {"plan-2": [...]}, ...]``, message ids counted across the plans (its
  ``plan-0`` ... ``plan-9`` folders hold per-plan copies, which the official
  code does not read and neither does this loader);
* ``chat_trunecated.json`` (sic), for some conversations: the same, cut to the
  tier's token budget; the official answer script
  (``answer_generation.batch_run_answer_generation``) reads it instead of
  ``chat.json`` when present, and so does this loader by default;
* ``probing_questions/probing_questions.json`` -- ``{question type: [question,
  ...]}``.

Each batch becomes one :class:`Session`, dated from the first user message
carrying a ``time_anchor`` (``"March-15-2024"``); message ids become turn ids.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from himga.benchmarks.beam._evidence import flatten_source_ids
from himga.data._dates import parse_session_date
from himga.data._errors import DatasetError, MissingEvidenceWarning, MissingIdWarning
from himga.data._fields import (
    NESTED_TOO_DEEPLY,
    REPEATED_KEY,
    RepeatedKeyError,
    checked,
    kind_of,
    unique_keys,
)
from himga.data._stream import iter_json_array
from himga.data.schema import Message, QAPair, Sample, Session

__all__ = [
    "ABSTENTION",
    "EVENT_ORDERING",
    "INSTRUCTION_FOLLOWING",
    "PREFERENCE_FOLLOWING",
    "QUESTION_TYPES",
    "conversation_dirs",
    "history_file",
    "iter_beam",
    "strip_marker",
]

#: The ten probing-question types, in the order of the official files and report.
QUESTION_TYPES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
ABSTENTION = "abstention"
EVENT_ORDERING = "event_ordering"
INSTRUCTION_FOLLOWING = "instruction_following"
PREFERENCE_FOLLOWING = "preference_following"

CHAT_FILE = "chat.json"
TRUNCATED_CHAT_FILE = "chat_trunecated.json"
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"

# The generator's "->-> batch,bullet" tag that ends most user messages (and a few
# assistant ones that echo it): "->-> 3,8", "->-> 2,N/A", "->-> 5,14)".
_MARKER = re.compile(r"\s*->->\s*(?:\d+|N/A)\s*,\s*(?:\d+|N/A)\s*\)?\s*\Z")
# Where the gold answer sits: "answer" for most types, the others for one each.
_ANSWER_FIELDS = (
    "answer",
    "ideal_answer",
    "ideal_response",
    "ideal_summary",
    "expected_compliance",
)
_MESSAGE_FIELDS = ("role", "id", "content")


def strip_marker(content: str) -> str:
    """``content`` without a trailing ``->-> batch,turn`` marker (unchanged if it has none)."""
    return _MARKER.sub("", content) if "->->" in content else content


def conversation_dirs(tier: Path) -> list[Path]:
    """The conversation folders of a tier folder: folders named by an ASCII number, in
    numeric order (``²`` is a digit to ``str.isdigit`` but no number)."""
    dirs = [p for p in tier.iterdir() if p.name.isascii() and p.name.isdigit() and p.is_dir()]
    return sorted(dirs, key=lambda p: int(p.name))


def history_file(conversation: Path, *, truncated: bool = True) -> Path:
    """The chat file a conversation's history is read from.

    ``chat_trunecated.json`` when present and ``truncated`` (the official answer
    script's choice), else ``chat.json``.
    """
    if truncated and (conversation / TRUNCATED_CHAT_FILE).is_file():
        return conversation / TRUNCATED_CHAT_FILE
    return conversation / CHAT_FILE


def iter_beam(
    tier: Path,
    dataset: str,
    ids: Collection[str] | None = None,
    *,
    truncated: bool = True,
    keep_markers: bool = False,
) -> Iterator[Sample]:
    """The samples of a tier folder, one per conversation, in numeric order.

    With ``ids``, other conversations are skipped without being read. Markers
    are stripped from message content unless ``keep_markers``; ``truncated``
    selects the history file (see :func:`history_file`). Raises
    :class:`DatasetError` naming file, conversation and field for malformed
    input, including a ``source_chat_ids`` entry that names no message of the
    history.
    """
    for conversation in conversation_dirs(tier):
        if ids is not None and conversation.name not in ids:
            continue
        parser = _Conversation(conversation, dataset, keep_markers)
        yield parser.sample(history_file(conversation, truncated=truncated))


class _History:
    """What a chat file gave so far: sessions, messages by turn id, turn extras."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []
        self.session_ids: set[str] = set()
        self.messages: dict[str, Message] = {}
        self.turn_extras: dict[str, dict[str, Any]] = {}


class _Conversation:
    def __init__(self, folder: Path, dataset: str, keep_markers: bool) -> None:
        self.folder = folder
        self.name = folder.name
        self.dataset = dataset
        self.keep_markers = keep_markers

    def error(self, file: Path, field: str | None, problem: str) -> DatasetError:
        return DatasetError(file, problem, sample=self.name, field=field)

    def sample(self, chat: Path) -> Sample:
        if not chat.is_file():
            plans = (
                " (its plan-*/ folders are per-plan copies, not read)"
                if any(self.folder.glob("plan-*"))
                else ""
            )
            raise self.error(chat, None, f"missing: a conversation folder needs chat.json{plans}")
        history = self.history(chat)
        questions, extras = self.questions(self.folder / QUESTIONS_FILE, chat, history.messages)
        metadata: dict[str, Any] = {
            "history_file": chat.name,
            "questions": extras,
            "turn_extras": history.turn_extras,
        }
        return Sample(
            sample_id=self.name,
            dataset=self.dataset,
            sessions=history.sessions,
            qa_pairs=questions,
            speakers=("user", "assistant"),
            metadata=metadata,
        )

    # -- the history ---------------------------------------------------------------

    def history(self, chat: Path) -> _History:
        history = _History()
        try:
            for index, element in iter_json_array(chat):
                self.element(chat, index, element, history)
        except DatasetError as exc:
            if exc.sample == self.name:
                raise
            # The stream names the element ("#3"); say which conversation too.
            field = None if exc.sample is None else f"[{exc.sample.lstrip('#')}]"
            raise self.error(chat, field, exc.problem) from None
        if not history.sessions:
            raise self.error(chat, None, "holds no batch")
        return history

    def element(self, chat: Path, index: int, element: Any, history: _History) -> None:
        """One element of a chat file: a batch, or (10M) a plan ``{"plan-K": [batch, ...]}``."""
        field = f"[{index}]"
        if not isinstance(element, dict):
            raise self.error(chat, field, f"expected a batch object, found {kind_of(element)}")
        if "turns" in element or len(element) != 1:
            self.batch(chat, field, None, element, history, index)
            return
        ((plan, batches),) = element.items()
        field = f"{field}.{plan}"
        if not isinstance(batches, list):
            raise self.error(chat, field, f"expected a list of batches, found {kind_of(batches)}")
        if not batches:
            raise self.error(chat, field, "a plan without batches")
        for position, batch in enumerate(batches):
            if not isinstance(batch, dict):
                raise self.error(
                    chat, f"{field}[{position}]", f"expected a batch object, found {kind_of(batch)}"
                )
            self.batch(chat, f"{field}[{position}]", plan, batch, history, position)

    def batch(
        self,
        chat: Path,
        field: str,
        plan: str | None,
        batch: dict[str, Any],
        history: _History,
        position: int,
    ) -> None:
        def error(sub: str, problem: str) -> DatasetError:
            return self.error(chat, f"{field}.{sub}" if sub else field, problem)

        if batch.get("batch_number") is None:
            # The official scripts number batches by position and never read the field.
            number = position + 1
            self.missing_id(error("batch_number", f"missing; numbered {number} by its position"))
        else:
            number = checked(error, batch, "batch_number", int, "batch_number")
        turns = checked(error, batch, "turns", list, "turns")
        session_id = f"batch-{number}" if plan is None else f"{plan}/batch-{number}"
        if session_id in history.session_ids:
            raise error("batch_number", f"a second batch {number}")
        history.session_ids.add(session_id)
        messages: list[Message] = []
        anchor: str | None = None
        for t, turn in enumerate(turns):
            if not isinstance(turn, list):
                raise error(f"turns[{t}]", f"expected a list of messages, found {kind_of(turn)}")
            for m, raw in enumerate(turn):
                where = f"turns[{t}][{m}]"
                message, raw_anchor = self.message(
                    error, where, raw, history, f"{session_id}/{where}"
                )
                if anchor is None and raw_anchor is not None and message.role == "user":
                    anchor = raw_anchor
                messages.append(message)
        if not messages:
            raise error("turns", "an empty batch: it holds no message")
        if anchor is None and isinstance(batch.get("time_anchor"), str):
            anchor = batch["time_anchor"]
        history.sessions.append(
            Session(session_id=session_id, messages=messages, date_str=anchor, date=_date(anchor))
        )

    def message(
        self,
        error: Callable[[str, str], DatasetError],
        field: str,
        raw: Any,
        history: _History,
        by_position: str,
    ) -> tuple[Message, str | None]:
        """One message; without an ``id`` (the official scripts then number it by position,
        and no ``source_chat_ids`` can name it) its turn id is ``by_position``, warned."""
        if not isinstance(raw, dict):
            raise error(field, f"expected a message object, found {kind_of(raw)}")
        role = checked(error, raw, "role", str, f"{field}.role")
        content = checked(error, raw, "content", str, f"{field}.content")
        if raw.get("id") is None:
            message_id: int | str = by_position
            self.missing_id(error(f"{field}.id", f"missing; turn id {by_position!r}"))
        else:
            message_id = checked(error, raw, "id", (int, str), f"{field}.id")
        turn_id = str(message_id)
        if turn_id in history.messages:
            raise error(f"{field}.id", f"message id {message_id!r} appears twice")
        if not self.keep_markers:
            content = strip_marker(content)
        message = Message(role=role, content=content, turn_id=turn_id)
        history.messages[turn_id] = message
        anchor = raw.get("time_anchor")
        if anchor is not None and not isinstance(anchor, str):
            raise error(f"{field}.time_anchor", f"expected str, found {kind_of(anchor)}")
        if len(raw) > 2:  # some field beyond role and content, maybe beyond the id too
            extras = {k: v for k, v in raw.items() if k not in _MESSAGE_FIELDS}
            if extras:
                history.turn_extras[turn_id] = extras
        return message, anchor

    @staticmethod
    def missing_id(problem: DatasetError) -> None:
        """Warn of an id the official scripts never read, numbered by position instead."""
        warnings.warn(MissingIdWarning(str(problem)), stacklevel=3)

    # -- the questions -------------------------------------------------------------

    def questions(
        self, file: Path, chat: Path, messages: Mapping[str, Message]
    ) -> tuple[list[QAPair], dict[str, dict[str, Any]]]:
        raw = _read_json(file, self.name)
        if not isinstance(raw, dict):
            raise self.error(
                file, None, f"expected an object of question types, found {kind_of(raw)}"
            )
        pairs: list[QAPair] = []
        extras: dict[str, dict[str, Any]] = {}
        for question_type, questions in raw.items():
            if question_type not in QUESTION_TYPES:
                known = ", ".join(QUESTION_TYPES)
                raise self.error(file, question_type, f"unknown question type (known: {known})")
            if not isinstance(questions, list):
                raise self.error(
                    file, question_type, f"expected a list of questions, found {kind_of(questions)}"
                )
            for index, question in enumerate(questions):
                pair, extra = self.question(
                    file, chat, f"{question_type}[{index}]", question_type, question, messages
                )
                pairs.append(pair)
                extras[pair.question_id] = extra
        return pairs, extras

    def question(
        self,
        file: Path,
        chat: Path,
        field: str,
        question_type: str,
        raw: Any,
        messages: Mapping[str, Message],
    ) -> tuple[QAPair, dict[str, Any]]:
        def error(sub: str, problem: str) -> DatasetError:
            return self.error(file, f"{field}.{sub}" if sub else field, problem)

        if not isinstance(raw, dict):
            raise error("", f"expected a question object, found {kind_of(raw)}")
        text = checked(error, raw, "question", str, "question")
        # The first gold field present is the gold: one of another type is an error,
        # not a reason to take the next field as gold.
        answer_field = next((k for k in _ANSWER_FIELDS if raw.get(k) is not None), None)
        if answer_field is None:
            raise error("answer", f"missing: none of {', '.join(_ANSWER_FIELDS)} is given")
        if not isinstance(raw[answer_field], str):
            raise error(answer_field, f"expected str, found {kind_of(raw[answer_field])}")
        rubric = checked(error, raw, "rubric", list, "rubric")
        if not rubric:
            raise error("rubric", "empty: a question is scored on its rubric items")
        for position, item in enumerate(rubric):
            if not isinstance(item, str):
                raise error(f"rubric[{position}]", f"expected str, found {kind_of(item)}")
        evidence: dict[str, None] = {}
        if question_type != ABSTENTION and raw.get("source_chat_ids") is None:
            # The official scripts never read it: the question is kept, without evidence
            # (no retrieval metric for it), and counted in one warning.
            warnings.warn(
                MissingEvidenceWarning(
                    f"{file}: sample {self.name}: field '{field}.source_chat_ids': missing"
                ),
                stacklevel=2,
            )
        elif question_type != ABSTENTION:
            sources = checked(error, raw, "source_chat_ids", (list, dict), "source_chat_ids")
            for path, leaf in flatten_source_ids(sources):
                if isinstance(leaf, bool) or not isinstance(leaf, (int, str)):
                    raise error(path, f"expected a message id, found {kind_of(leaf)}")
                if str(leaf) not in messages:
                    raise error(
                        path,
                        f"message id {leaf!r} is not in {chat.name} (question {text!r})",
                    )
                evidence[str(leaf)] = None
        question_id = f"{self.name}:{field}"
        pair = QAPair(
            question_id=question_id,
            question=text,
            answer=raw[answer_field],
            category=question_type,
            evidence=tuple(evidence),
            evidence_turns=tuple(evidence),
            adversarial=question_type == ABSTENTION,
            gold={"rubric": list(rubric)},
        )
        kept = ("question", answer_field, "rubric")
        return pair, {k: v for k, v in raw.items() if k not in kept}


def _read_json(file: Path, conversation: str) -> Any:
    try:
        return json.loads(file.read_bytes().decode("utf-8"), object_pairs_hook=unique_keys)
    except RepeatedKeyError as exc:
        raise DatasetError(file, REPEATED_KEY, sample=conversation, field=exc.key) from None
    except FileNotFoundError:
        raise DatasetError(file, "missing", sample=conversation) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(
            file, f"not UTF-8 text ({exc.reason} at byte {exc.start})", sample=conversation
        ) from None
    except json.JSONDecodeError as exc:
        cut = "truncated, " if exc.pos >= len(exc.doc) else ""
        raise DatasetError(
            file,
            f"invalid JSON ({cut}{exc.msg} at line {exc.lineno}, column {exc.colno})",
            sample=conversation,
        ) from None
    except RecursionError:
        raise DatasetError(file, NESTED_TOO_DEEPLY, sample=conversation) from None


def _date(anchor: str | None) -> datetime | None:
    """The date of a ``time_anchor``: ``"March-15-2024"``, or any layout the loaders know."""
    if anchor is None:
        return None
    try:
        return datetime.strptime(anchor, "%B-%d-%Y")
    except ValueError:
        return parse_session_date(anchor)

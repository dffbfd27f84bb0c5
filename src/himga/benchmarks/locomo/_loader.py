"""The LoCoMo loader: three layouts of the same data into :class:`Sample` objects.

Layouts (all give equal samples for the same conversations):

* the single file ``locomo10.json``: a list of ``{"sample_id", "conversation",
  "qa", "event_summary", ...}``;
* the repository's ``locomo10.zip``: one ``<n>.json`` per conversation with
  ``speaker_a``, ``speaker_b``, ``session_N``, ``session_N_date_time``,
  ``events_session_N``, ``qa``, ... at top level; ``<n>.json`` is ``conv-<n>``;
* a directory holding such ``<n>.json`` files (e.g. the zip extracted).
"""

from __future__ import annotations

import re
import warnings
import zipfile
import zlib
from collections.abc import Collection, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

from himga.benchmarks.locomo._categories import ADVERSARIAL, category_of_code
from himga.benchmarks.locomo._evidence import normalise_evidence
from himga.data._errors import DatasetError, EvidenceWarning
from himga.data._fields import checked, kind_of, read_json
from himga.data.schema import Message, QAPair, Sample, Session

__all__ = ["IMAGE_FORMAT", "find_locomo", "iter_locomo"]

#: How an image turn's BLIP caption is appended to its text in ``Message.content``.
IMAGE_FORMAT = "{text} [shares an image: {caption}]"

SINGLE_FILE = "locomo10.json"
ZIP_FILE = "locomo10.zip"
#: Where the zip keeps its per-conversation files.
ZIP_LAYOUT = Path("data", "multimodal_dialog", "locomo10_v2")

_SESSION = re.compile(r"session_(\d+)")
_SESSION_DATE = re.compile(r"session_(\d+)_date_time")
_EVENTS = re.compile(r"events_session_\d+")
_OBSERVATION = re.compile(r"session_\d+_observation")
_SUMMARY = re.compile(r"session_\d+_summary")
_CONVERSATION_FILE = re.compile(r"(\d+)\.json")
_TURN_FIELDS = ("speaker", "dia_id", "text")


def find_locomo(directory: Path) -> Path | None:
    """The one copy of LoCoMo in ``directory``: ``locomo10.json``, else ``locomo10.zip``,
    else the directory holding per-conversation ``<n>.json`` files: ``directory``
    itself, or its ``data/multimodal_dialog/locomo10_v2`` (the zip extracted).

    Nothing deeper is searched: a stray ``<n>.json`` further down does not make a
    directory a copy, and a directory near the filesystem root costs two listings.
    """
    for name in (SINGLE_FILE, ZIP_FILE):
        if (directory / name).is_file():
            return directory / name
    for place in (directory, directory / ZIP_LAYOUT):
        if place.is_dir() and any(
            _CONVERSATION_FILE.fullmatch(p.name) for p in place.glob("*.json")
        ):
            return place
    return None


def iter_locomo(
    path: Path, dataset: str = "locomo", ids: Collection[str] | None = None
) -> Generator[Sample, None, None]:
    """Samples of a LoCoMo file (``.json`` single file or ``.zip``) or directory, in order.

    With ``ids``, other samples are skipped without being validated. Raises
    :class:`DatasetError` for malformed input (naming file, sample, field),
    including a sample id seen twice. Warns :class:`EvidenceWarning` for
    evidence ids that name no turn.
    """
    seen: dict[str, str] = {}
    for file, sample_id, raw in _raw_samples(path):
        if sample_id in seen:
            raise DatasetError(
                file,
                f"duplicate sample id (also in {seen[sample_id]})",
                sample=repr(sample_id),
                field="sample_id",
            )
        seen[sample_id] = file
        if ids is None or sample_id in ids:
            yield _Parser(file, sample_id).sample(raw, dataset)


def _raw_samples(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(file, sample_id, sample in the single-file layout)`` for every conversation."""
    if path.is_dir():
        files = sorted(path.rglob("*.json"), key=lambda p: (_conversation_number(str(p)), p))
        for found in files:
            name = str(found)
            yield _from_repository_layout(name, read_json(name, found.read_bytes()))
    elif zipfile.is_zipfile(path):
        yield from _zip_samples(path)
    else:
        data = read_json(str(path), path.read_bytes())
        if not isinstance(data, list):
            raise DatasetError(path, f"expected a list of samples, found {kind_of(data)}")
        for index, raw in enumerate(data):
            if not isinstance(raw, dict):
                raise DatasetError(path, f"is {kind_of(raw)}, not an object", sample=f"#{index}")
            sample_id = raw.get("sample_id")
            if not isinstance(sample_id, str):
                raise DatasetError(
                    path,
                    f"missing or not a string ({kind_of(sample_id)})",
                    sample=f"#{index}",
                    field="sample_id",
                )
            yield str(path), sample_id, raw


def _zip_samples(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if not n.endswith("/")]
            for name in sorted(names, key=lambda n: (_conversation_number(f"{path}/{n}"), n)):
                file = f"{path}/{name}"
                yield _from_repository_layout(file, read_json(file, archive.read(name)))
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise DatasetError(path, f"corrupt zip archive: {exc}") from None
    except (RuntimeError, NotImplementedError) as exc:
        # zipfile's words for an encrypted member and an unsupported compression method.
        raise DatasetError(path, f"unreadable zip archive: {exc}") from None


def _conversation_number(file: str) -> int:
    name = file.rsplit("/", 1)[-1]
    match = _CONVERSATION_FILE.fullmatch(name)
    if match is None:
        raise DatasetError(file, "a LoCoMo per-conversation file must be named <number>.json")
    return int(match[1])


def _from_repository_layout(file: str, raw: Any) -> tuple[str, str, dict[str, Any]]:
    """Rewrite a repository-layout conversation into the single-file layout."""
    sample_id = f"conv-{_conversation_number(file)}"
    if not isinstance(raw, dict):
        raise DatasetError(file, f"is {kind_of(raw)}, not an object", sample=repr(sample_id))
    groups: dict[str, dict[str, Any]] = {
        "conversation": {},
        "event_summary": {},
        "observation": {},
        "session_summary": {},
    }
    sample: dict[str, Any] = {"sample_id": sample_id}
    for key, value in raw.items():
        if (
            key in ("speaker_a", "speaker_b")
            or _SESSION.fullmatch(key)
            or _SESSION_DATE.fullmatch(key)
        ):
            groups["conversation"][key] = value
        elif _EVENTS.fullmatch(key):
            groups["event_summary"][key] = value
        elif _OBSERVATION.fullmatch(key):
            groups["observation"][key] = value
        elif _SUMMARY.fullmatch(key):
            groups["session_summary"][key] = value
        else:
            sample[key] = value
    for group, fields in groups.items():
        if fields or group == "conversation":
            sample[group] = fields
    return file, sample_id, sample


class _Parser:
    """Validation and conversion of one sample, with errors naming file, sample and field."""

    def __init__(self, file: str, sample_id: str) -> None:
        self.file = file
        self.sample_id = sample_id

    def error(self, field: str, problem: str) -> DatasetError:
        return DatasetError(self.file, problem, sample=repr(self.sample_id), field=field)

    def get(
        self, mapping: Mapping[str, Any], key: str, kind: type | tuple[type, ...], field: str
    ) -> Any:
        """``mapping[key]`` if present and of ``kind`` (never a bool unless asked)."""
        return checked(self.error, mapping, key, kind, field)

    def sample(self, raw: dict[str, Any], dataset: str) -> Sample:
        conversation = self.get(raw, "conversation", dict, "conversation")
        qa = self.get(raw, "qa", list, "qa")
        speakers = tuple(
            self.get(conversation, key, str, f"conversation.{key}")
            for key in ("speaker_a", "speaker_b")
        )
        metadata: dict[str, Any] = {
            key: value
            for key, value in raw.items()
            if key not in ("sample_id", "conversation", "qa")
        }
        turn_extras: dict[str, dict[str, Any]] = {}
        sessions = self.sessions(conversation, metadata, turn_extras)
        if turn_extras:
            metadata["turn_extras"] = turn_extras
        turn_ids = {m.turn_id for s in sessions for m in s.messages}
        qa_extras: dict[str, dict[str, Any]] = {}
        qa_pairs = [self.question(i, q, turn_ids, qa_extras) for i, q in enumerate(qa)]
        if qa_extras:
            metadata["qa_extras"] = qa_extras
        return Sample(
            sample_id=self.sample_id,
            dataset=dataset,
            sessions=sessions,
            qa_pairs=qa_pairs,
            speakers=speakers,
            metadata=metadata,
        )

    def sessions(
        self,
        conversation: dict[str, Any],
        metadata: dict[str, Any],
        turn_extras: dict[str, dict[str, Any]],
    ) -> list[Session]:
        numbers: set[int] = set()
        dates: dict[int, str] = {}
        extras: dict[str, Any] = {}
        for key, value in conversation.items():
            if match := _SESSION.fullmatch(key):
                numbers.add(int(match[1]))
            elif match := _SESSION_DATE.fullmatch(key):
                dates[int(match[1])] = self.get(conversation, key, str, f"conversation.{key}")
            elif key not in ("speaker_a", "speaker_b"):
                extras[key] = value
        if extras:
            metadata["conversation_extras"] = extras
        undated = {f"session_{n}": dates[n] for n in sorted(dates) if n not in numbers}
        if undated:
            # The release lists dates of sessions that have no turns; kept, not ingested.
            metadata["dates_of_sessions_without_turns"] = undated
        seen_turns: set[str] = set()
        sessions = []
        for number in sorted(numbers):
            key = f"session_{number}"
            turns = self.get(conversation, key, list, f"conversation.{key}")
            if number not in dates:
                raise self.error(f"conversation.{key}_date_time", "missing (the session has turns)")
            messages = [
                self.message(f"conversation.{key}[{i}]", turn, seen_turns, turn_extras)
                for i, turn in enumerate(turns)
            ]
            sessions.append(Session(session_id=key, messages=messages, date_str=dates[number]))
        return sessions

    def message(
        self,
        field: str,
        turn: Any,
        seen_turns: set[str],
        turn_extras: dict[str, dict[str, Any]],
    ) -> Message:
        if not isinstance(turn, dict):
            raise self.error(field, f"a turn must be an object, found {kind_of(turn)}")
        speaker, dia_id, text = (self.get(turn, k, str, f"{field}.{k}") for k in _TURN_FIELDS)
        if dia_id in seen_turns:
            raise self.error(f"{field}.dia_id", f"duplicate turn id {dia_id!r}")
        seen_turns.add(dia_id)
        content = text
        if "blip_caption" in turn:
            caption = self.get(turn, "blip_caption", str, f"{field}.blip_caption")
            content = IMAGE_FORMAT.format(text=text, caption=caption)
        extra = {k: v for k, v in turn.items() if k not in _TURN_FIELDS}
        if extra:
            turn_extras[dia_id] = extra
        return Message(role=speaker, content=content, turn_id=dia_id)

    def question(
        self,
        index: int,
        raw: Any,
        turn_ids: set[str | None],
        qa_extras: dict[str, dict[str, Any]],
    ) -> QAPair:
        field = f"qa[{index}]"
        if not isinstance(raw, dict):
            raise self.error(field, f"a question must be an object, found {kind_of(raw)}")
        question_id = f"{self.sample_id}:q{index + 1}"
        question = self.get(raw, "question", str, f"{field}.question")
        code = self.get(raw, "category", int, f"{field}.category")
        try:
            category = category_of_code(code)
        except ValueError as exc:
            raise self.error(f"{field}.category", str(exc)) from None
        # Category 5 keeps its answer in `adversarial_answer` (two also carry an `answer`):
        # the distractor the official evaluation offers against "Not mentioned in the
        # conversation", not a right answer.
        answer_key = "adversarial_answer" if category == ADVERSARIAL else "answer"
        if answer_key not in raw and "answer" in raw:
            answer_key = "answer"
        answer = self.get(raw, answer_key, (str, int), f"{field}.{answer_key}")
        evidence_raw = self.get(raw, "evidence", list, f"{field}.evidence")
        for position, entry in enumerate(evidence_raw):
            if not isinstance(entry, str):
                raise self.error(
                    f"{field}.evidence[{position}]", f"expected a str, found {kind_of(entry)}"
                )
        evidence = normalise_evidence(evidence_raw)
        for turn_id in evidence:
            if turn_id not in turn_ids:
                warnings.warn(
                    EvidenceWarning(
                        f"{self.file}: sample {self.sample_id!r}: question {question_id!r}: "
                        f"evidence id {turn_id!r} names no turn; kept in evidence, "
                        "left out of evidence_turns"
                    ),
                    stacklevel=2,
                )
        extra = {
            k: v
            for k, v in raw.items()
            if k not in ("question", "category", "evidence", answer_key)
        }
        if extra:
            qa_extras[question_id] = extra
        return QAPair(
            question_id=question_id,
            question=question,
            answer=str(answer),
            category=category,
            evidence=evidence,
            evidence_turns=[t for t in evidence if t in turn_ids],
            adversarial=category == ADVERSARIAL,
        )

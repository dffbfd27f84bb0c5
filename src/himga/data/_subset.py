"""A fixed subset of a benchmark's questions, named by id in a file (``--questions``)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from himga._errors import HimgaError
from himga.data.schema import Sample

__all__ = ["QuestionFileError", "QuestionSubset"]


class QuestionFileError(HimgaError, ValueError):
    """A question-id file cannot be read, is malformed, or names a question the data lacks
    (the message names the file and, for a line's problem, the line)."""


@dataclass(frozen=True)
class QuestionSubset:
    """The question ids of a file: one a line; blank lines and lines starting with ``#``
    are skipped. ``lines`` maps each id to its line number."""

    path: Path
    lines: Mapping[str, int]

    @classmethod
    def read(cls, path: Path) -> QuestionSubset:
        """The ids of ``path``; :class:`QuestionFileError` when it cannot be read, a line
        holds more than one word, an id repeats, or there is none."""
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            raise QuestionFileError(f"{path}: not UTF-8 text") from None
        except OSError as exc:
            raise QuestionFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        lines: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) > 1:
                raise QuestionFileError(
                    f"{path}:{number}: expected one question id a line, got {line.strip()!r}"
                )
            (question_id,) = words
            if question_id in lines:
                raise QuestionFileError(
                    f"{path}:{number}: question id {question_id!r} repeats line "
                    f"{lines[question_id]}"
                )
            lines[question_id] = number
        if not lines:
            raise QuestionFileError(f"{path}: names no question id")
        return cls(path, lines)

    @property
    def ids(self) -> frozenset[str]:
        """The selected question ids."""
        return frozenset(self.lines)

    @property
    def sha256(self) -> str:
        """SHA-256 of the sorted ids, one a line: the same set gives the same hash
        whatever the file's order, comments or name (it goes into the run identity)."""
        return hashlib.sha256("\n".join(sorted(self.lines)).encode("utf-8")).hexdigest()

    def select(self, samples: Sequence[Sample], where: str) -> list[Sample]:
        """``samples`` with only the selected questions, and without the samples left with
        none (they are not ingested). :class:`QuestionFileError` naming the file, line and
        id of the first id none of ``samples`` asks (``where`` says what they are)."""
        asked = {qa.question_id for sample in samples for qa in sample.qa_pairs}
        unknown = [(line, qid) for qid, line in self.lines.items() if qid not in asked]
        if unknown:
            line, qid = min(unknown)
            more = f" ({len(unknown) - 1} more unknown ids)" if len(unknown) > 1 else ""
            raise QuestionFileError(
                f"{self.path}:{line}: unknown question id {qid!r}: not in {where}{more}"
            )
        selected = []
        for sample in samples:
            kept = [qa for qa in sample.qa_pairs if qa.question_id in self.lines]
            if kept:
                selected.append(dataclasses.replace(sample, qa_pairs=kept))
        return selected

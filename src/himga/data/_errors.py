"""Exceptions and warnings of the dataset loaders."""

from __future__ import annotations

from os import PathLike
from typing import Any

from himga._errors import HimgaError, HimgaWarning

__all__ = [
    "ChecksumMismatchError",
    "DatasetError",
    "DatasetNotFoundError",
    "DatasetWarning",
    "DownloadError",
    "DuplicateSessionWarning",
    "EvidenceWarning",
    "MissingEvidenceWarning",
    "MissingIdWarning",
    "UnknownCategoryWarning",
    "UnknownDatasetError",
    "UnverifiedDownloadWarning",
]


class DatasetError(HimgaError, ValueError):
    """A dataset file is malformed: its message names the file, the sample and the field.

    ``file``, ``sample`` and ``field`` are also kept as attributes (``None`` when
    the problem is not tied to one, e.g. a file that is not JSON at all).
    """

    def __init__(
        self,
        file: str | PathLike[str],
        problem: str,
        *,
        sample: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file)
        self.sample = sample
        self.field = field
        self.problem = problem
        where = [self.file]
        if sample is not None:
            where.append(f"sample {sample}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{': '.join(where)}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        # The default rebuilds from ``args`` (the message alone), which this
        # ``__init__`` cannot take: without this, copy and pickle fail.
        return (_rebuild, (type(self), self.file, self.problem, self.sample, self.field))


def _rebuild(
    cls: type[DatasetError], file: str, problem: str, sample: str | None, field: str | None
) -> DatasetError:
    return cls(file, problem, sample=sample, field=field)


class UnknownDatasetError(HimgaError, ValueError):
    """The dataset name is not one himga knows."""


class ChecksumMismatchError(DatasetError):
    """A downloaded file does not have the pinned sha256; nothing was kept."""


class DatasetNotFoundError(HimgaError, FileNotFoundError):
    """No copy of the dataset was found and none could be downloaded.

    The message says what to download and where to put it.
    """


class DownloadError(HimgaError, OSError):
    """The download itself failed (network, HTTP status); nothing was kept."""


class DatasetWarning(HimgaWarning):
    """Base class of the loaders' warnings: the data is loaded, but something is off.

    Loading warns once per kind of quirk and dataset: the message counts them
    (``summary`` says what they are) and ``details`` holds one line per quirk,
    naming file, sample and field (``himga datasets --verbose`` prints them).
    """

    summary = "data quirks"

    def __init__(self, message: str, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.details = details


class EvidenceWarning(DatasetWarning):
    """An evidence id names no turn (or session) of its sample.

    The id stays in ``QAPair.evidence`` and is left out of ``QAPair.evidence_turns``;
    the question is kept.
    """

    summary = "evidence ids name no turn or session of their sample (kept in evidence)"


class MissingEvidenceWarning(DatasetWarning):
    """A question carries no evidence ids where its benchmark usually gives them (BEAM's
    ``source_chat_ids``, which its official scripts never read): it is kept, without
    evidence, so no retrieval metric covers it."""

    summary = "questions carry no evidence ids (kept, without retrieval metrics)"


class MissingIdWarning(DatasetWarning):
    """A BEAM batch or message without the ``batch_number`` / ``id`` its official scripts
    never read (they number batches and messages by position): it is kept, numbered by
    its position, so no ``source_chat_ids`` can name such a message."""

    summary = "batches or messages have no id (numbered by their position)"


class DuplicateSessionWarning(DatasetWarning):
    """A LongMemEval haystack repeats a session id; the repeat is kept under ``"<id>#<k>"``."""

    summary = "sessions repeat a session id of their haystack (kept as '<id>#<k>')"


class UnknownCategoryWarning(DatasetWarning):
    """A question's category field (LongMemEval's ``question_type``, LoCoMo-Plus's
    ``relation_type``) is one himga does not know, or missing where the official
    scripts never read it; the question is kept as category ``"unknown"``."""

    summary = "questions have an unknown or missing category (kept as category 'unknown')"


class UnverifiedDownloadWarning(DatasetWarning):
    """A downloaded file has no pinned sha256, so only its shape could be checked."""

"""The crash-safe JSONL checkpoint of an evaluation run.

Layout: a header line ``{"himga_checkpoint": 2, "run": {...}}`` naming the run
(:meth:`himga.eval.RunIdentity.to_dict`), then one :class:`EvalResult` per
line. Each line is written with one ``write`` and made durable (flush +
``fsync``) before the next question counts as done, so a ``kill -9`` loses at
most the line being written; that torn last line is cut off when the file is
opened again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from himga._errors import HimgaError
from himga._json import dumps
from himga.eval._identity import _diff
from himga.scoring._result import EvalResult

__all__ = ["Checkpoint", "CheckpointError", "CheckpointMismatchError", "read_checkpoint"]

_FORMAT = 2


class CheckpointError(HimgaError, ValueError):
    """A checkpoint file is malformed (the message names the file and line)."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint file belongs to another run; ``fields`` names what differs."""

    def __init__(self, message: str, differing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = differing


class Checkpoint:
    """An append-only, fsync'd JSONL record of finished questions.

    ``run`` describes the configuration (memory, model, prompts); reopening a
    file written under another configuration raises
    :class:`CheckpointMismatchError` rather than mixing two runs.
    """

    def __init__(self, path: str | os.PathLike[str], run: Mapping[str, Any]) -> None:
        self._path = Path(path)
        self._run = json.loads(json.dumps(dict(run)))  # normalised as it is stored
        self._file: IO[str] | None = None

    @property
    def path(self) -> Path:
        """The checkpoint file."""
        return self._path

    def open(self) -> dict[tuple[str, str], EvalResult]:
        """Open for appending; the results already recorded, by ``(sample_id, question_id)``.

        A later line for the same question supersedes an earlier one (a retried error).
        """
        done: dict[tuple[str, str], EvalResult] = {}
        has_header = False
        if self._path.exists():
            has_header = self._read(done)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self._path.open("a", encoding="utf-8")
        if not has_header:
            self._write_line({"himga_checkpoint": _FORMAT, "run": self._run})
        return done

    def _read(self, done: dict[tuple[str, str], EvalResult]) -> bool:
        raw = self._path.read_bytes()
        complete, _, torn = raw.rpartition(b"\n")
        if torn:
            # The process died while writing this line: it was never acknowledged.
            try:
                with self._path.open("r+b") as file:
                    file.truncate(len(complete) + 1 if complete else 0)
            except OSError as exc:  # say which file could not be written
                raise OSError(exc.errno, exc.strerror, str(self._path)) from exc
        recorded = read_checkpoint(self._path, raw)
        if recorded is None:
            return False
        run, results = recorded
        found: list[str] = []
        for key in sorted(set(run) | set(self._run)):
            _diff(key, run.get(key), self._run.get(key), found)
        if found:
            raise CheckpointMismatchError(
                f"{self._path} was recorded by another run, so its results cannot be "
                f"resumed; differs in {'; '.join(found)} (recorded != now)",
                tuple(line.partition(":")[0] for line in found),
            )
        done.update(results)
        return True

    def append(self, result: EvalResult) -> None:
        """Record ``result`` durably."""
        self._write_line(result.to_dict())

    def _write_line(self, record: Mapping[str, Any]) -> None:
        if self._file is None:
            raise RuntimeError("Checkpoint.append before Checkpoint.open")
        try:
            self._file.write(dumps(record) + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:  # a full disk: say which file could not be written
            raise OSError(exc.errno, exc.strerror, str(self._path)) from exc

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_checkpoint(
    path: Path, raw: bytes | None = None
) -> tuple[dict[str, Any], dict[tuple[str, str], EvalResult]] | None:
    """A checkpoint's header ``run`` and its results by ``(sample_id, question_id)`` (a later
    line superseding an earlier one), read without writing: a torn last line, which a
    writer still running or killed left, is ignored. ``None`` when not even the header is
    complete; :class:`CheckpointError` naming the line when one is malformed. ``raw``: the
    file's bytes, when already read."""
    complete = (path.read_bytes() if raw is None else raw).rpartition(b"\n")[0]
    if not complete:
        return None
    try:
        lines = complete.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{path}: not UTF-8 text: {exc}") from None
    header = _parse(path, lines[0], 1)
    version = header.get("himga_checkpoint")
    if isinstance(version, int) and version != _FORMAT and "run" in header:
        raise CheckpointMismatchError(
            f"{path} has checkpoint format {version} (another himga version, "
            f"this one writes {_FORMAT}); start over in another file",
            ("himga_checkpoint",),
        )
    if version != _FORMAT or not isinstance(header.get("run"), dict):
        raise CheckpointError(f"{path}:1: not a himga checkpoint header")
    results: dict[tuple[str, str], EvalResult] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            result = EvalResult.from_dict(_parse(path, line, number))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{path}:{number}: malformed result: {exc}") from exc
        results[result.key] = result
    return header["run"], results


def _parse(path: Path, line: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}:{number}: invalid JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise CheckpointError(f"{path}:{number}: expected a JSON object")
    return record

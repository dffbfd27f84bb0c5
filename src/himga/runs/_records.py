"""The run-record primitive: one append-only JSONL writer, one reader, one atomic JSON writer.

A record file grows one compact JSON line at a time; each :meth:`JsonlAppender.append`
is one ``write`` of a whole line, flushed to the operating system (``fsync=True``: to
the disk too) before it returns. A process killed mid-write (``kill -9``) leaves at
most a *torn* last line, without its newline; :func:`read_jsonl` drops it or parses
it (``torn=``), and an appender opened on such a file cuts it off first, so the next
line never joins it. Whole files are written with :func:`write_json` (temporary file,
``fsync``, rename).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

from himga._errors import HimgaError
from himga._json import dumps
from himga.runs._files import write_json

__all__ = ["JsonlAppender", "RecordError", "TornLine", "read_jsonl", "write_json"]

#: What :func:`read_jsonl` does with a last line without its newline: ``"drop"`` it (an
#: appended file: a kill may tear its last line) or ``"parse"`` it (a file written whole).
TornLine = Literal["drop", "parse"]


class RecordError(HimgaError, ValueError):
    """A record file holds a line that is not a JSON value (the message names file and line)."""


def read_jsonl(
    path: Path,
    *,
    torn: TornLine = "drop",
    on_damage: Callable[[str], None] | None = None,
) -> list[Any]:
    """The JSON value of each line of ``path``, in order (``[]`` if it is missing).

    A line that is not JSON is :class:`RecordError` naming ``path`` and the line;
    with ``on_damage``, it is said there instead and ends the reading (the lines
    before it are kept). Other read failures (``OSError``) are the caller's.
    """
    try:
        text = path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    last = lines.pop()  # "" when the file ends in a newline
    if last and torn == "parse":
        lines.append(last)
    found: list[Any] = []
    for number, line in enumerate(lines, 1):
        try:
            found.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            problem = f"{path}:{number}: not a JSON line ({exc})"
            if on_damage is None:
                raise RecordError(problem) from None
            on_damage(problem)
            break
    return found


class JsonlAppender:
    """Appends JSON lines to ``path`` (created if missing), a context manager.

    Opening cuts a torn last line off (what a killed writer left), so every line
    stays whole. ``fsync``: each line reaches the disk, not only the operating system,
    before :meth:`append` returns (a power cut loses none of them then).
    """

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        self._stream: IO[bytes] | None = None

    def __enter__(self) -> JsonlAppender:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Open the file for appending, its torn last line cut off."""
        stream = self.path.open("a+b")
        try:
            stream.seek(0)
            data = stream.read()
            if data and not data.endswith(b"\n"):
                stream.truncate(data.rfind(b"\n") + 1)
        except BaseException:
            stream.close()
            raise
        self._stream = stream

    def append(self, record: Any) -> None:
        """Write ``record`` as one line and flush it (``OSError`` if it cannot be written)."""
        if self._stream is None:
            raise ValueError(f"{self.path}: the appender is not open")
        self._stream.write((dumps(record) + "\n").encode("utf-8", errors="backslashreplace"))
        self._stream.flush()
        if self._fsync:
            os.fsync(self._stream.fileno())

    def close(self) -> None:
        """Close the file (idempotent); a failure to close is not raised: every line
        was flushed when it was appended."""
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()

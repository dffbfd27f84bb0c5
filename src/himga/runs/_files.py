"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never a torn one."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from himga._json import dumps

__all__ = [
    "json_text",
    "leading_entries",
    "replacing",
    "save_figure",
    "write_json",
    "write_jsonl",
    "write_text_atomic",
]


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, so writers that go by it still do) to
    write instead: renamed over ``path`` (atomic on POSIX and Windows) when the block ends,
    deleted if it raises, so ``path`` is never seen half-written."""
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as exc:
        if exc.filename not in (None, str(temporary)):
            raise
        # A write that failed (a full disk) names the file being written, not its stand-in.
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replacing`, fsync'd before the rename.

    A lone surrogate (in a report's path or label; JSON text escapes its own) is written
    as its ``\\udXXXX`` escape rather than failing the write.
    """
    with (
        replacing(path) as temporary,
        temporary.open("w", encoding="utf-8", errors="backslashreplace", newline="\n") as file,
    ):
        file.write(text)
        file.flush()
        os.fsync(file.fileno())


def save_figure(pyplot: Any, figure: Any, path: Path) -> None:
    """Lay out ``figure`` (a matplotlib figure of ``pyplot``), write it to ``path`` through
    :func:`replacing`, and close it, written or not (pyplot keeps every open figure)."""
    figure.tight_layout()
    try:
        with replacing(path) as temporary:
            figure.savefig(temporary, dpi=120)
    finally:
        pyplot.close(figure)


def json_text(data: Mapping[str, Any]) -> str:
    """The JSON text himga writes for one object: indented, UTF-8 kept, newline-terminated."""
    return dumps(data, indent=2) + "\n"


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """:func:`json_text` of ``data`` written atomically to ``path``."""
    write_text_atomic(path, json_text(data))


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> str:
    """One compact JSON object per line, written atomically; the SHA-256 (hex) of the bytes."""
    text = "".join(dumps(record) + "\n" for record in records)
    write_text_atomic(path, text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def leading_entries(text: str) -> dict[str, Any]:
    """The entries of the JSON object ``text`` starts with, up to its first defect: what a
    torn (cut-off) or damaged object file still holds. An entry counts only when the
    ``,`` or ``}`` after its value is there, so a value cut short (``12`` of ``125``)
    is never taken for whole."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] = {}

    def skip(position: int) -> int:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        return position

    position = skip(0)
    if not text.startswith("{", position):
        return found
    position += 1
    while True:
        try:
            key, position = decoder.raw_decode(text, skip(position))
            position = skip(position)
            if not isinstance(key, str) or not text.startswith(":", position):
                return found
            value, position = decoder.raw_decode(text, skip(position + 1))
        except (ValueError, RecursionError):
            return found
        position = skip(position)
        if not text.startswith((",", "}"), position):
            return found
        found[key] = value
        if text.startswith("}", position):
            return found
        position += 1

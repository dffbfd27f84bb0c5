"""Streaming of the elements of a top-level JSON array, with bounded memory.

``json.load`` materialises the whole document (LongMemEval_M is 2.7 GB). Here
the file is read in chunks and each element is decoded with the C scanner
behind :meth:`json.JSONDecoder.raw_decode`; only the current element and one
chunk are held at a time. Before decoding, at least 1.25 times the previous
element's size is buffered, so most decodes succeed the first time; a decode
that fails because the element is not yet fully buffered is retried after
reading at least as much again as is buffered, so the re-parsing work stays
linear in the element size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from himga.data._errors import DatasetError
from himga.data._fields import NESTED_TOO_DEEPLY

__all__ = ["iter_json_array"]

_CHUNK_CHARS = 4 * 1024 * 1024
_WHITESPACE = " \t\n\r"
# A decode error this close to the end of the buffer may just be a cut-off
# token (e.g. half of a "\\u00e9" escape or of "true").
_TAIL = 16
_NUMBER_TAIL = re.compile(r"[0-9.eE+\-]*")


def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, element)`` for each element of the JSON array in ``path``.

    Raises :class:`DatasetError` (naming the file and the element's index) when
    the file is not UTF-8, not an array, truncated, malformed, or has data after
    the array. Elements before a defect are yielded before the error is raised.
    """
    try:
        with path.open(encoding="utf-8") as handle:
            yield from _Reader(path, handle).elements()
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _Reader:
    def __init__(self, path: Path, handle: Any) -> None:
        self._path = path
        self._handle = handle
        self._decoder = json.JSONDecoder()
        self._buffer = ""
        self._pos = 0
        self._consumed = 0  # characters dropped from the front of the buffer
        self._last_size = 0  # characters of the last element decoded
        self._eof = False

    def _fill(self, at_least: int) -> bool:
        """Append at least ``at_least`` characters unless at end of file; ``False`` at EOF."""
        if self._eof:
            return False
        chunk = self._handle.read(max(at_least, _CHUNK_CHARS))
        if not chunk:
            self._eof = True
            return False
        if self._pos:
            self._consumed += self._pos
            self._buffer = self._buffer[self._pos :]
            self._pos = 0
        self._buffer += chunk
        return True

    def _skip_whitespace(self) -> str:
        """The next non-whitespace character ('' at end of file), not consumed."""
        while True:
            while self._pos < len(self._buffer) and self._buffer[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buffer):
                return self._buffer[self._pos]
            if not self._fill(_CHUNK_CHARS):
                return ""

    def _error(self, index: int | None, problem: str) -> DatasetError:
        return DatasetError(
            self._path, problem, sample=None if index is None else f"#{index}", field=None
        )

    def elements(self) -> Iterator[tuple[int, Any]]:
        first = self._skip_whitespace()
        if first != "[":
            found = "an empty file" if first == "" else f"{first!r}"
            raise self._error(None, f"expected a JSON array ('['), found {found}")
        self._pos += 1
        index = 0
        if self._skip_whitespace() == "]":
            self._pos += 1
        else:
            while True:
                yield index, self._decode(index)
                index += 1
                separator = self._skip_whitespace()
                if separator == "]":
                    self._pos += 1
                    break
                if separator != ",":
                    found = (
                        "the end of the file (truncated)" if separator == "" else repr(separator)
                    )
                    raise self._error(index - 1, f"expected ',' or ']' after it, found {found}")
                self._pos += 1
                if self._skip_whitespace() == "":
                    raise self._error(index, "file ends after ',' (truncated)")
        trailing = self._skip_whitespace()
        if trailing:
            raise self._error(None, f"unexpected data after the array: {trailing!r}")

    def _decode(self, index: int) -> Any:
        # Records of one file have similar sizes: buffering as much as the last one
        # took (plus a margin) first avoids most failed, partial decodes.
        wanted = self._last_size + self._last_size // 4
        available = len(self._buffer) - self._pos
        if available < wanted:
            self._fill(wanted - available)
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as exc:
                cut_off = exc.pos >= len(self._buffer) - _TAIL or exc.msg.startswith(
                    "Unterminated string"
                )
                if cut_off and self._fill(len(self._buffer) - self._pos):
                    continue
                problem = f"invalid JSON: {exc.msg} at character {self._consumed + exc.pos}"
                truncated = exc.msg.startswith("Unterminated string") or not self._buffer[
                    exc.pos :
                ].strip(_WHITESPACE)
                if truncated:
                    problem = f"file ends inside the element (truncated): {exc.msg}"
                raise self._error(index, problem) from None
            except RecursionError:
                raise self._error(index, NESTED_TOO_DEEPLY) from None
            # A value ending at the buffer's end, or a number followed only by characters
            # that could continue it ("0." + "5"), may be cut off by the chunking.
            cut_number = isinstance(value, (int, float)) and _NUMBER_TAIL.fullmatch(
                self._buffer, end
            )
            if (end == len(self._buffer) or cut_number) and self._fill(_CHUNK_CHARS):
                continue
            self._last_size = end - self._pos
            self._pos = end
            return value

"""Option types more than one command parses alike (``--memory-timeout``'s is
:func:`himga.eval._memory_calls.memory_timeout_argument`, shared with the pytest plugin)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["path"]

# The longest file name (one path component) Linux, macOS and Windows file systems hold.
_NAME_MAX = 255


def path(text: str) -> Path:
    """A file or directory argument for argparse: refused in one line when no file system
    could hold it -- a NUL, a lone surrogate that the file-system encoding cannot write, or
    a component longer than 255 bytes -- which every operation on it would otherwise fail
    with a ``ValueError``, ``UnicodeEncodeError`` or ``OSError``."""
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file name: it holds a NUL character")
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a file name: {exc.object[exc.start : exc.end]!r} at position "
            f"{exc.start} cannot be encoded ({exc.reason})"
        ) from None
    for part in Path(text).parts:
        if len(os.fsencode(part)) > _NAME_MAX:
            raise argparse.ArgumentTypeError(
                f"{part[:40]}...: a file name of {len(os.fsencode(part))} bytes (at most "
                f"{_NAME_MAX})"
            )
    return Path(text)

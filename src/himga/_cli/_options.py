"""Option types more than one command (and the pytest plugin) parse alike."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from himga.eval._memory_calls import parse_memory_timeout

__all__ = ["memory_timeout", "path"]


def memory_timeout(text: str) -> float | None:
    """``--memory-timeout S|none`` for argparse: its one-line message on a bad value."""
    try:
        return parse_memory_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def path(text: str) -> Path:
    """A file or directory argument for argparse: its one-line message for a name no file
    system can hold (a NUL character, or a lone surrogate that the file-system encoding
    cannot write), where opening it would raise ``ValueError`` or ``UnicodeEncodeError``."""
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file name: it holds a NUL character")
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a file name: {exc.object[exc.start : exc.end]!r} at position "
            f"{exc.start} cannot be encoded ({exc.reason})"
        ) from None
    return Path(text)

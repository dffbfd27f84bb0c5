"""Option types more than one command (and the pytest plugin) parse alike."""

from __future__ import annotations

import argparse

from himga.eval._memory_calls import parse_memory_timeout

__all__ = ["memory_timeout"]


def memory_timeout(text: str) -> float | None:
    """``--memory-timeout S|none`` for argparse: its one-line message on a bad value."""
    try:
        return parse_memory_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc

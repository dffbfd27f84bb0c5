"""``JSONValue``: the type of what a judge caches and a run metric reports.

Kept apart from :mod:`himga.benchmarks` and :mod:`himga.eval` so both can name it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JSONValue"]

JSONValue: TypeAlias = (
    "bool | int | float | str | Sequence[JSONValue] | Mapping[str, JSONValue] | None"
)
"""A value :func:`json.dumps` writes and :func:`json.loads` reads back equal."""

"""JSON as himga writes it: ``JSONValue``, the type of what a judge caches and a run
metric reports, and :func:`dumps`, the text of every JSON file and line himga writes.

Kept apart from :mod:`himga.llm`, :mod:`himga.benchmarks`, :mod:`himga.eval` and
:mod:`himga.runs` so all of them can use it without importing each other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

__all__ = ["LONE_SURROGATE", "JSONValue", "dumps"]

JSONValue: TypeAlias = (
    "bool | int | float | str | Sequence[JSONValue] | Mapping[str, JSONValue] | None"
)
"""A value :func:`json.dumps` writes and :func:`json.loads` reads back equal."""

#: One lone surrogate: a ``str`` may hold one (from JSON), UTF-8 cannot.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps(
    value: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
) -> str:
    """``json.dumps(value, ensure_ascii=False, ...)``, except that each lone surrogate
    (``"\\ud800"``: valid in JSON and in a ``str``, but not encodable as UTF-8) is written
    as its ``\\uXXXX`` escape, which :func:`json.loads` reads back as the same character.

    So the text always encodes as UTF-8 (a dataset or an LLM reply holding one cannot
    stop a write), and text without lone surrogates is exactly what
    ``ensure_ascii=False`` writes (cache keys made before stay the same). Only a high
    surrogate written right before a low one reads back as the pair's one character,
    as with ``ensure_ascii=True``. Surrogates occur only inside JSON strings, so the
    escape is always inside one.
    """
    text = json.dumps(
        value, ensure_ascii=False, indent=indent, sort_keys=sort_keys, separators=separators
    )
    return LONE_SURROGATE.sub(_escaped, text)

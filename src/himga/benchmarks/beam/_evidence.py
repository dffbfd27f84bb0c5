"""``source_chat_ids`` of a BEAM probing question, flattened to message ids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["flatten_source_ids"]


def flatten_source_ids(raw: Any, field: str = "source_chat_ids") -> Iterator[tuple[str, Any]]:
    """Every leaf of ``raw`` with the path that names it, depth first, in file order.

    ``raw`` is a list (``[28]``), a nested list (``[4, [60, 62]]``) or an object of
    lists (``{"first_statement": [58], "second_statement": [24]}``), in any mix.
    Yields ``(field path, leaf)`` such as ``("source_chat_ids.first_statement[0]", 58)``;
    the caller checks that each leaf is a message id.
    """
    if isinstance(raw, list):
        for index, item in enumerate(raw):
            yield from flatten_source_ids(item, f"{field}[{index}]")
    elif isinstance(raw, dict):
        for key, value in raw.items():
            yield from flatten_source_ids(value, f"{field}.{key}")
    else:
        yield field, raw

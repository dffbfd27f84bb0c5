"""Type-checked access to fields of decoded JSON, for error messages that name the field."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any

from himga._errors import HimgaError
from himga.data._errors import DatasetError

__all__ = [
    "NESTED_TOO_DEEPLY",
    "REPEATED_KEY",
    "RepeatedKeyError",
    "checked",
    "kind_of",
    "read_json",
    "unique_keys",
]

#: The problem of a JSON document nested deeper than the decoder recurses (RecursionError).
NESTED_TOO_DEEPLY = "invalid JSON: nested too deeply to read (deeper than Python's recursion limit)"


#: The problem of a key given twice in one JSON object (``json`` would keep the last).
REPEATED_KEY = "given twice in one object (which one is meant cannot be told)"


class RepeatedKeyError(HimgaError, ValueError):
    """A JSON object gives ``key`` twice (raised by :func:`unique_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` refusing a key given twice: :class:`RepeatedKeyError`."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise RepeatedKeyError(key)
        found[key] = value
    return found


def kind_of(value: Any) -> str:
    """How a JSON value is described in error messages: ``null``, ``a str``, ``a list``..."""
    return "null" if value is None else f"a {type(value).__name__}"


def checked(
    error: Callable[[str, str], DatasetError],
    mapping: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    field: str,
) -> Any:
    """``mapping[key]`` if present and an instance of ``kind``; else ``error(field, problem)``.

    ``bool`` never passes for ``int``: a true/false where a number belongs is wrong.
    """
    if key not in mapping:
        raise error(field, "missing")
    value = mapping[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise error(field, f"expected {expected}, found {kind_of(value)}")
    return value


def read_json(file: str | PathLike[str], data: bytes) -> Any:
    """``data`` decoded as UTF-8 JSON; a :class:`DatasetError` naming ``file`` if it is not,
    or if an object gives a key twice (naming the key as the field)."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys)
    except RepeatedKeyError as exc:
        raise DatasetError(file, REPEATED_KEY, field=exc.key) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(file, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            file, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise DatasetError(file, NESTED_TOO_DEEPLY) from None

"""Type-checked access to fields of decoded JSON, for error messages that name the field."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any

from himga.data._errors import DatasetError

__all__ = ["NESTED_TOO_DEEPLY", "checked", "kind_of", "read_json"]

#: The problem of a JSON document nested deeper than the decoder recurses (RecursionError).
NESTED_TOO_DEEPLY = "invalid JSON: nested too deeply to read (deeper than Python's recursion limit)"


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
    """``data`` decoded as UTF-8 JSON; a :class:`DatasetError` naming ``file`` if it is not."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(file, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            file, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise DatasetError(file, NESTED_TOO_DEEPLY) from None

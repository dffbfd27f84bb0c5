"""Type-checked access to fields of decoded JSON, for error messages that name the field."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from himga.data._errors import DatasetError

__all__ = ["checked", "kind_of"]


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

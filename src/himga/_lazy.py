"""Names a package exports but imports only on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    names: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    before: Callable[[str], object] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``names`` (name -> private submodule).

    The first lookup of a name calls ``before(name)`` (e.g. to require an extra),
    imports ``package.<submodule>`` and keeps the value in ``namespace`` (the
    package's ``globals()``), so later lookups never come back here.
    """

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if before is not None:
            before(name)
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return getattr_, dir_

"""Names a package exports but imports only on first use (PEP 562), and the deprecated
aliases of names that moved to another module."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names", "moved_names"]


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


def moved_names(
    module: str, moved: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """``module``'s ``__getattr__`` for the names in ``moved`` (name -> the module it
    moved to), each an alias kept for one release: its first lookup warns
    (:class:`DeprecationWarning`, naming the new import) and imports it from there by
    name, so ``module`` does not import its new home, which may sit above it; the value
    is kept in ``namespace`` (``module``'s ``globals()``), so it warns once."""

    def getattr_(name: str) -> Any:
        home = moved.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} moved to {home}: from {home} import {name}",
            DeprecationWarning,
            stacklevel=2,
        )
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return getattr_

"""Lazy imports of optional dependencies, with an error that says what to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from himga._errors import HimgaError

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(HimgaError, ImportError):
    """An optional dependency of himga is not installed."""


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install.

    Only a missing top-level module is translated: an import error *inside* an
    installed package propagates unchanged, so a broken install stays visible.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != module.split(".")[0]:
            raise
        raise MissingExtraError(
            f"{purpose} needs the optional dependency {module!r}, which is not installed: "
            f"pip install 'himga[{extra}]'"
        ) from exc

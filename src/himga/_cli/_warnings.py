"""How the commands print warnings: one line each, ``<prefix>: <Category>: <message>``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["one_line_warnings"]


def one_line_warnings(prefix: str) -> Callable[..., None]:
    """A :func:`warnings.showwarning` that prints one line on stderr (Python's own adds
    the file, line and source line of the caller: noise to a user of the command)."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        print(f"{prefix}: {category.__name__}: {message}", file=sys.stderr)

    return show

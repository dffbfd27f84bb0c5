"""``os._exit`` as an exception while a ``himga`` command runs: no memory ends it unrecorded.

``os._exit(n)`` ends the process at once: no ``except``, no ``finally``, no
flush. A memory calling it would make ``himga check`` exit with the status the
memory chose (0 reads as a pass) and ``himga eval`` stop without a summary.
Inside :func:`exit_raises`, ``os._exit(n)`` called in the process that entered
it raises :class:`ProcessExitCalled` in the calling thread instead: a
``SystemExit``, which every memory-call guard already records as the memory's
failure (a contract's FAIL, a question's memory error). A process forked from
it (``multiprocessing``) keeps the real ``os._exit``: its children still end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["GUARD_FILE", "ProcessExitCalled", "exit_called", "exit_raises", "hard_exit"]

#: This module's file: tracebacks that name where a memory raised skip its frame.
GUARD_FILE = __file__
#: The real ``os._exit``, bound at import: himga's own hard exit (its entry point's) uses it.
hard_exit = os._exit


class ProcessExitCalled(SystemExit):
    """``os._exit(code)`` was called inside :func:`exit_raises`; ``code`` is its status.

    A ``SystemExit`` rather than a :class:`~himga.HimgaError` (an ``Exception``):
    the memory's own ``except Exception`` must not swallow it, as it would not
    swallow ``sys.exit``.
    """

    def __str__(self) -> str:
        return f"os._exit({self.code!r}) called (it would have ended the himga process)"


@contextlib.contextmanager
def exit_raises() -> Iterator[None]:
    """While active, ``os._exit`` in this process raises :class:`ProcessExitCalled`."""
    owner = os.getpid()
    before = os._exit

    def raising(status: int) -> NoReturn:
        if os.getpid() != owner:  # a forked child: exiting is its business
            hard_exit(status)
        raise ProcessExitCalled(status)

    os._exit = raising
    try:
        yield
    finally:
        os._exit = before


def exit_called(exc: SystemExit) -> str:
    """How ``exc`` was asked for, for a message: ``os._exit(0)`` or ``sys.exit(0)``."""
    how = "os._exit" if isinstance(exc, ProcessExitCalled) else "sys.exit"
    return f"{how}({exc.code!r})"

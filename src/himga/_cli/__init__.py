"""The ``himga`` command line."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import NoReturn

import himga
from himga._cli import (
    _cache,
    _check,
    _compare,
    _datasets,
    _errata,
    _eval,
    _fake_llm,
    _judge,
    _judge_test,
    _memories,
    _merge,
    _report,
    _runs,
    _view,
)
from himga._cli._exits import INTERRUPTED
from himga._cli._warnings import one_line_warnings
from himga._exit_guard import exit_raises, hard_exit

__all__ = ["entry_point", "main", "parser"]

#: Seconds the finished ``himga`` program waits for threads it did not start (a
#: memory's own) before it exits without them.
LINGER_GRACE = 2.0


def parser() -> argparse.ArgumentParser:
    """The ``himga`` argument parser, one sub-parser per command (each sets ``handler``)."""
    made = argparse.ArgumentParser(
        prog="himga", description="Long-term conversational memory research tools."
    )
    made.add_argument("--version", action="version", version=f"himga {himga.__version__}")
    commands = made.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (
        _cache,
        _check,
        _compare,
        _datasets,
        _errata,
        _eval,
        _fake_llm,
        _judge,
        _judge_test,
        _memories,
        _merge,
        _report,
        _runs,
        _view,
    ):
        command.register(commands)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``himga`` command; returns the process exit code (130 after Ctrl-C, in one
    line: the commands that keep work say what they kept). A memory's ``os._exit`` raises
    instead of ending the process (:func:`himga._exit_guard.exit_raises`). Text stdout or
    stderr cannot encode (a file name that is not UTF-8, a lone surrogate from data) is
    printed escaped rather than ending the command."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    code: int | None = None
    try:
        args = parser().parse_args(argv)
        with warnings.catch_warnings(), exit_raises():
            # One line each (e.g. a broken benchmark plug-in skipped), not Python's two.
            warnings.showwarning = one_line_warnings("himga")
            code = args.handler(args)
    except KeyboardInterrupt:
        if code is not None:
            # The command had finished and said so; only the guards' undoing was cut short.
            return code
        print("himga: interrupted (Ctrl-C)", file=sys.stderr)
        return INTERRUPTED
    return code


def entry_point() -> NoReturn:
    """The ``himga`` program: :func:`main`, then exit with its code even if a memory left
    a non-daemon thread running."""
    code = main()
    _exit(code)


def _exit(code: int) -> NoReturn:
    # Python waits for every non-daemon thread before it exits, so a memory's own
    # thread that never ends (a background indexer, a server) would keep a finished
    # command alive for ever. Everything himga writes is written by now: such a thread
    # gets a moment to finish, then the process exits without it.
    main_thread = threading.main_thread()
    lingering = [t for t in threading.enumerate() if t is not main_thread and not t.daemon]
    for thread in lingering:
        thread.join(LINGER_GRACE / len(lingering))
    still = sorted({t.name for t in lingering if t.is_alive()})
    if not still:
        sys.exit(code)
    with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing to tell
        print(f"himga: exiting without waiting for thread(s) {', '.join(still)}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    hard_exit(code)

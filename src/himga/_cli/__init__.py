"""The ``himga`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import himga
from himga._cli import _check, _compare, _datasets, _eval, _fake_llm, _memories, _merge, _report

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The ``himga`` argument parser, one sub-parser per command (each sets ``handler``)."""
    made = argparse.ArgumentParser(
        prog="himga", description="Long-term conversational memory research tools."
    )
    made.add_argument("--version", action="version", version=f"himga {himga.__version__}")
    commands = made.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (_check, _compare, _datasets, _eval, _fake_llm, _memories, _merge, _report):
        command.register(commands)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``himga`` command; returns the process exit code (130 after Ctrl-C, in one
    line: the commands that keep work say what they kept)."""
    try:
        args = parser().parse_args(argv)
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("himga: interrupted (Ctrl-C)", file=sys.stderr)
        return _check.INTERRUPTED
    return code

"""The ``himga`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from himga._cli import _check, _datasets, _eval

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``himga`` command; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="himga", description="Long-term conversational memory research tools."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (_check, _datasets, _eval):
        command.register(commands)
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code

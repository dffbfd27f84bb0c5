"""Placeholder: `himga eval` is being written."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    parser = commands.add_parser("eval", help="(being written)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print("himga eval: not implemented yet")
    return 2

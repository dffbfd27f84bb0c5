"""``himga memories``: the registered memories, listed without importing any of them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from himga.memory import PluginConflictError, available_memories

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``memories`` subcommand."""
    parser = commands.add_parser(
        "memories",
        help="list the registered memories (name, distribution, version, target)",
        description=(
            "List every memory registered under the 'himga.memories' entry points -- "
            "himga's built-ins and installed plug-ins (HIMGA_NO_PLUGINS=1: built-ins "
            "only) -- from package metadata, without importing any plug-in. Exit "
            "status 2 when two distributions claim one name."
        ),
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print one row per registered memory; 2 on a name conflict."""
    try:
        plugins = available_memories()
    except PluginConflictError as exc:
        print(f"himga memories: error: {exc}", file=sys.stderr)
        return 2
    table = [("name", "distribution", "version", "target")]
    table += [(p.name, p.distribution, p.version or "-", p.spec) for p in plugins.values()]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0

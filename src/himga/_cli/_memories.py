"""``himga memories``: the registered memories, listed without importing any of them."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import distribution as find_distribution
from typing import Any

from himga.memory import DeclaresNeeds, MemoryPlugin, PluginConflictError, available_memories
from himga.memory._registry import BUILTIN_DISTRIBUTION

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``memories`` subcommand."""
    parser = commands.add_parser(
        "memories",
        help="list the registered memories: name, distribution, version, target, needs, cold start",
        description=(
            "List every memory registered under the 'himga.memories' entry points -- "
            "himga's built-ins and installed plug-ins (HIMGA_NO_PLUGINS=1: built-ins "
            "only) -- from package metadata, without importing any plug-in; for the "
            "built-ins, what each needs at run time (an embedder, Node.js, an LLM) and "
            "what a cold start costs. Exit status 2 when two distributions claim one name."
        ),
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array instead: per memory its name, description (a built-in's "
        "docstring, a plug-in distribution's summary), target, distribution, version, the "
        "extras it needs and whether they are installed, what it needs at run time and its "
        "cold-start cost (built-ins; null for plug-ins)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print one row per registered memory; 2 on a name conflict."""
    try:
        plugins = available_memories()
    except PluginConflictError as exc:
        print(f"himga memories: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([_describe(plugin) for plugin in plugins.values()], indent=2))
        return 0
    table = [("name", "distribution", "version", "target", "needs", "cold start")]
    for p in plugins.values():
        needs, cold = _needs(p)
        table.append((p.name, p.distribution, p.version or "-", p.spec, needs or "-", cold or "-"))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


def _describe(plugin: MemoryPlugin) -> dict[str, Any]:
    """One memory as ``--json`` lists it (the install hint only when something is missing)."""
    installed = plugin.installed
    needs, cold = _needs(plugin)
    hint = f"pip install '{plugin.distribution}[{','.join(plugin.extras)}]'"
    return {
        "name": plugin.name,
        "description": _description(plugin),
        "target": plugin.spec,
        "distribution": plugin.distribution,
        "version": plugin.version,
        "extras": list(plugin.extras),
        "installed": installed,
        "install": None if installed else hint,
        "needs": needs,
        "cold_start": cold,
    }


def _needs(plugin: MemoryPlugin) -> tuple[str | None, str | None]:
    """A built-in's :class:`~himga.memory.DeclaresNeeds` (``"nothing"``, cold = warm, when it
    declares none); ``(None, None)`` for a plug-in, which is never imported here."""
    if plugin.distribution != BUILTIN_DISTRIBUTION:
        return None, None
    factory: object = plugin.load()
    if isinstance(factory, DeclaresNeeds):
        return factory.NEEDS, factory.COLD_START
    return "nothing", "none (cold = warm)"


def _description(plugin: MemoryPlugin) -> str:
    """The first line of a built-in's docstring (himga's own modules import nothing heavy
    until a memory is built); a plug-in's distribution summary, never importing it."""
    if plugin.distribution == BUILTIN_DISTRIBUTION:
        doc = inspect.getdoc(plugin.load()) or ""
        return doc.split("\n\n")[0].replace("\n", " ")
    try:
        return find_distribution(plugin.distribution).metadata["Summary"] or ""
    except PackageNotFoundError:
        return ""

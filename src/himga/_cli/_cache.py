"""``himga cache``: what the machine's embedding cache holds, and emptying it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from himga._cli._options import path as path_argument
from himga._extras import MissingExtraError

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``cache`` subcommand (``info``, ``clear``)."""
    parser = commands.add_parser(
        "cache",
        help="show or clear the embedding cache shared by every memory that embeds",
        description=(
            "The embedding cache (himga.embed.CachedEmbedder): one SQLite file per machine "
            "($HIMGA_EMBED_CACHE, else the user cache dir), keyed by embedder, model and "
            "text, shared by dense, hybrid, himga with an embedder, mem0 and LangMem; at "
            "most $HIMGA_EMBED_CACHE_MAX vectors, the oldest written dropped first."
        ),
    )
    parser.add_argument("action", choices=("info", "clear"), help="info: path, vectors, size")
    parser.add_argument(
        "--path", type=path_argument, default=None, help="another cache file than the default"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the cache's path, vectors and size, or clear it; 2 without the dense extra or
    when the file is no himga embedding cache (it is then left untouched)."""
    try:
        from himga.embed import EmbedderError, cache_info, clear_cache
    except MissingExtraError as exc:
        print(f"himga cache: error: {exc}", file=sys.stderr)
        return 2
    try:
        if args.action == "clear":
            deleted = clear_cache(args.path)
            print(f"cleared {deleted} vectors from {cache_info(args.path).path}")
            return 0
        info = cache_info(args.path)
    except EmbedderError as exc:
        print(f"himga cache: error: {exc}", file=sys.stderr)
        return 2
    print(f"path         {info.path}")
    print(f"vectors      {info.entries}")
    print(f"size         {info.bytes / 1e6:.1f} MB")
    print(f"max vectors  {info.max_entries}")
    return 0

"""``himga view [RUN_OR_DIR ...]``: the runs in a local web viewer, served or as one HTML file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga._cli._options import path as path_argument
from himga.runs import PartialRun, Run, RunHead, RunReadError, find_runs, load_head, load_run

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``view`` subcommand."""
    parser = commands.add_parser(
        "view",
        help="browse runs in a local web viewer: leaderboard, questions, diffs (offline)",
        description=(
            "Serve a viewer of the runs given (run directories, or directories of runs; "
            "default runs/) on 127.0.0.1 and print its address (Ctrl-C stops it), or with "
            "--html write it as one self-contained HTML file. A leaderboard, each question "
            "with its evidence and retrieved context, the diff of two runs, recall@k curves; "
            "runs without a manifest (under way, or killed) are shown partial. Nothing is "
            "fetched from the network. Exit status 2 when no run can be read (an unreadable "
            "one is named on stderr and left out)."
        ),
    )
    parser.add_argument(
        "runs",
        nargs="*",
        type=path_argument,
        metavar="RUN_OR_DIR",
        help="runs to show (default: runs/)",
    )
    parser.add_argument(
        "--html", type=path_argument, default=None, metavar="FILE", help="write one file"
    )
    parser.add_argument("--port", type=_port, default=0, help="port to serve on (default: free)")
    parser.set_defaults(handler=run)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0..65535, got {text!r}")
    return port


def run(args: argparse.Namespace) -> int:
    """Serve (until Ctrl-C) or write the viewer; 2 when no run can be read or served."""
    # Imported here: the viewer is only needed by this command.
    from himga.view import ViewData, ViewServer, write_html

    paths: list[Path] = []
    for given in args.runs or [Path("runs")]:
        try:
            paths += find_runs(given)
        except RunReadError as exc:
            print(f"himga view: {exc}", file=sys.stderr)
    if not paths:
        print("himga view: error: no run to show", file=sys.stderr)
        return 2
    if args.html is not None:
        loaded = _read(paths, load_run)
        if not loaded:
            return 2
        try:
            write_html(ViewData(loaded), args.html)
        except OSError as exc:
            print(f"himga view: error: cannot write {args.html}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {args.html} ({len(loaded)} runs)")
        return 0
    try:
        server = ViewServer(port=args.port)
    except OSError as exc:
        print(
            f"himga view: error: cannot serve on port {args.port}: {exc.strerror}", file=sys.stderr
        )
        return 2
    with server:
        # The address first, the runs' heads next (manifests and metrics): a browser
        # opened at once gets the page while they are read; their results are read
        # in the background from then on (up to a budget), or when a page needs them.
        server.start()
        print(f"himga view: {len(paths)} runs at {server.url} (Ctrl-C stops)", flush=True)
        try:
            heads = _read(paths, load_head)
            if not heads:
                return 2
            data = ViewData(heads)
            server.provide(data)
            data.prefetch()
            server.wait()
        except KeyboardInterrupt:
            print("himga view: stopped", file=sys.stderr)
    return 0


def _read(
    paths: list[Path], read: Callable[[Path], Run | RunHead | PartialRun]
) -> list[Run | RunHead | PartialRun]:
    """Each run ``read`` can read; those it cannot are named on stderr (and an error when
    none is left)."""
    loaded: list[Run | RunHead | PartialRun] = []
    for path in paths:
        try:
            loaded.append(read(path))
        except RunReadError as exc:
            print(f"himga view: left out {path}: {exc}", file=sys.stderr)
    if not loaded:
        print("himga view: error: no run to show", file=sys.stderr)
    return loaded

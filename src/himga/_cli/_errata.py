"""``himga errata fetch NAME``: download a published audit of a benchmark's gold."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from himga.benchmarks._errata import PUBLISHED_ERRATA

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``errata`` subcommand."""
    parser = commands.add_parser(
        "errata",
        help="fetch a published audit of a benchmark's gold (for report/compare --errata)",
        description=(
            "Download the published errata NAME into the dataset cache, verified against "
            "its pinned sha256, and print its path; report and compare then take NAME as "
            "--errata. Known: "
            + ", ".join(
                f"{name} ({e.dataset}, licence {e.license}, {e.url})"
                for name, e in PUBLISHED_ERRATA.items()
            )
            + ". Exit status 2 when it cannot be fetched."
        ),
    )
    parser.add_argument("action", choices=("fetch",), help="fetch: download and verify")
    parser.add_argument("name", choices=tuple(PUBLISHED_ERRATA), metavar="NAME")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Fetch; 0 with the path printed, 2 when the download fails or does not verify."""
    from himga.benchmarks._errata import fetch_errata
    from himga.data import ChecksumMismatchError, DownloadError

    try:
        fetched = fetch_errata(args.name, show_progress=not args.no_progress)
    except (DownloadError, ChecksumMismatchError, OSError) as exc:
        print(f"himga errata: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.name}: {fetched} (licence {PUBLISHED_ERRATA[args.name].license})")
    return 0

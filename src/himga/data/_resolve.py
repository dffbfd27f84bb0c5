"""Where datasets are looked for (``$HIMGA_DATA_DIR``, the cache) and :class:`Resolution`,
what :func:`himga.benchmarks.resolve_dataset` found."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

__all__ = ["CACHE_DIR_ENV", "DATA_DIR_ENV", "Resolution", "cache_dir"]

DATA_DIR_ENV = "HIMGA_DATA_DIR"
CACHE_DIR_ENV = "HIMGA_CACHE_DIR"


@dataclass(frozen=True)
class Resolution:
    """Where dataset ``name`` resolved: the file (or directory) and which step found it.

    ``source`` is ``"path"`` (the explicit ``path``), ``"HIMGA_DATA_DIR"``,
    ``"cache"`` or ``"download"`` (just downloaded into the cache).
    """

    name: str
    path: Path
    source: str


def cache_dir() -> Path:
    """The dataset cache: ``$HIMGA_CACHE_DIR``, else ``<user cache dir>/himga/datasets``."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("himga")) / "datasets"

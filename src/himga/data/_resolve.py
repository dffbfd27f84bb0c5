"""Where a dataset is read from: explicit path, data dir, cache, download, or a clear error."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from himga.data._download import download_file
from himga.data._errors import DatasetNotFoundError, DownloadError
from himga.data._locomo import find_locomo
from himga.data._registry import DatasetSpec, get_spec

__all__ = ["Resolution", "cache_dir", "find_in_directory", "resolve_dataset"]

DATA_DIR_ENV = "HIMGA_DATA_DIR"
CACHE_DIR_ENV = "HIMGA_CACHE_DIR"


@dataclass(frozen=True)
class Resolution:
    """Where dataset ``name`` resolved: the file (or LoCoMo directory) and which step found it.

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


def find_in_directory(spec: DatasetSpec, directory: Path) -> Path | None:
    """The one copy of ``spec`` in ``directory`` (preference order of ``spec.files``)."""
    if spec.family == "locomo":
        return find_locomo(directory)
    for name in spec.files:
        if (directory / name).is_file():
            return directory / name
    return None


def _search_dirs(spec: DatasetSpec) -> list[tuple[str, Path]]:
    dirs: list[tuple[str, Path]] = []
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        dirs.append((DATA_DIR_ENV, Path(data_dir) / spec.name))
        if spec.family != spec.name:
            dirs.append((DATA_DIR_ENV, Path(data_dir) / spec.family))
    dirs.append(("cache", cache_dir() / spec.name))
    return dirs


def resolve_dataset(
    name: str,
    *,
    path: str | os.PathLike[str] | None = None,
    download: bool = True,
    show_progress: bool = True,
) -> Resolution:
    """Find dataset ``name``, in this order.

    1. ``path``, if given: a file, or a directory holding a copy (nothing else is tried);
    2. ``$HIMGA_DATA_DIR/<name>/`` (and ``$HIMGA_DATA_DIR/longmemeval/`` for LongMemEval);
    3. the cache, ``cache_dir()/<name>/``;
    4. with ``download``, the official file (URL overridable with ``$HIMGA_<NAME>_URL``),
       verified and saved into the cache.

    Raises :class:`DatasetNotFoundError` saying what to download and where to
    put it; a corrupt download raises :class:`ChecksumMismatchError`.
    """
    spec = get_spec(name)
    if path is not None:
        explicit = Path(path)
        if explicit.is_file():
            return Resolution(name, explicit, "path")
        if explicit.is_dir():
            found = find_in_directory(spec, explicit)
            if found is not None:
                return Resolution(name, found, "path")
            raise DatasetNotFoundError(
                f"{explicit} holds no copy of {name!r}: expected {_expected(spec)}"
            )
        raise DatasetNotFoundError(f"{explicit} does not exist (given as the path of {name!r})")
    searched = _search_dirs(spec)
    for source, directory in searched:
        if directory.is_dir():
            found = find_in_directory(spec, directory)
            if found is not None:
                return Resolution(name, found, source)
    where = ", ".join(str(d) for _, d in searched)
    if not download:
        raise DatasetNotFoundError(f"{name!r} not found (looked in {where}); {_guidance(spec)}")
    url = os.environ.get(spec.url_env) or spec.url
    dest = cache_dir() / spec.name / spec.download_name
    try:
        download_file(url, dest, sha256=spec.sha256, show_progress=show_progress)
    except DownloadError as exc:
        raise DatasetNotFoundError(
            f"{name!r} not found (looked in {where}) and the download failed ({exc}); "
            f"{_guidance(spec)}"
        ) from exc
    return Resolution(name, dest, "download")


def _expected(spec: DatasetSpec) -> str:
    names = " or ".join(spec.files)
    if spec.family == "locomo":
        names += " or per-conversation <n>.json files"
    return names


def _guidance(spec: DatasetSpec) -> str:
    checksum = f" (sha256 {spec.sha256})" if spec.sha256 else ""
    return (
        f"download {spec.url}{checksum} and save it as "
        f"$HIMGA_DATA_DIR/{spec.name}/{spec.download_name} "
        f"or {cache_dir() / spec.name / spec.download_name}, or pass path=..."
    )

"""``resolve_dataset``: where a registered benchmark's dataset is read from -- explicit
path, data dir, cache, download, or a clear error."""

from __future__ import annotations

import os
from pathlib import Path

from himga.benchmarks._registry import get_benchmark
from himga.data._errors import DatasetNotFoundError, DownloadError
from himga.data._resolve import DATA_DIR_ENV, Resolution, cache_dir

__all__ = ["resolve_dataset"]


def resolve_dataset(
    name: str,
    *,
    path: str | os.PathLike[str] | None = None,
    download: bool = True,
    show_progress: bool = True,
) -> Resolution:
    """Find dataset ``name`` (a registered benchmark, see :mod:`himga.benchmarks`), in
    this order.

    1. ``path``, if given: a file, or a directory holding a copy (nothing else is tried);
    2. ``$HIMGA_DATA_DIR`` (the benchmark says where in it, by convention ``<name>/``);
    3. the cache, ``cache_dir()`` (likewise);
    4. with ``download``, the benchmark's official files, verified and saved into
       ``cache_dir()/<name>/``.

    Raises :class:`~himga.data.UnknownDatasetError` for a name no benchmark has,
    :class:`~himga.data.DatasetNotFoundError` saying what to download and where to put it; a
    corrupt download raises :class:`~himga.data.ChecksumMismatchError`.
    """
    benchmark = get_benchmark(name)
    cache = cache_dir() / name
    if path is not None:
        explicit = Path(path)
        if explicit.is_file():
            return Resolution(name, explicit, "path")
        if explicit.is_dir():
            found = benchmark.locate(explicit)
            if found is not None:
                return Resolution(name, found, "path")
            raise DatasetNotFoundError(
                f"{explicit} holds no copy of {name!r}: {benchmark.guidance(cache)}"
            )
        raise DatasetNotFoundError(f"{explicit} does not exist (given as the path of {name!r})")
    searched: list[tuple[str, Path]] = []
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        searched.append((DATA_DIR_ENV, Path(data_dir)))
    searched.append(("cache", cache_dir()))
    for source, directory in searched:
        if directory.is_dir():
            found = benchmark.locate(directory)
            if found is not None:
                return Resolution(name, found, source)
    where = ", ".join(str(d) for _, d in searched)
    if not download:
        raise DatasetNotFoundError(
            f"{name!r} not found (looked in {where}); {benchmark.guidance(cache)}"
        )
    try:
        downloaded = benchmark.download(cache, show_progress=show_progress)
    except DownloadError as exc:
        raise DatasetNotFoundError(
            f"{name!r} not found (looked in {where}) and the download failed ({exc}); "
            f"{benchmark.guidance(cache)}"
        ) from exc
    return Resolution(name, downloaded, "download")

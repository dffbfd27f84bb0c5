"""``load_dataset`` / ``iter_dataset``: resolve a registered benchmark's dataset, then read
its samples."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from pathlib import Path

from himga.benchmarks._registry import get_benchmark
from himga.benchmarks._resolve import resolve_dataset
from himga.data import schema
from himga.data._errors import DatasetError, DatasetWarning
from himga.data._resolve import Resolution
from himga.data.schema import Sample

__all__ = ["iter_dataset", "load_dataset"]


def iter_dataset(
    name: str,
    *,
    path: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    ids: Iterable[str] | None = None,
    download: bool = True,
) -> Iterator[Sample]:
    """Stream the samples of dataset ``name`` in file order.

    The dataset is resolved now (see :func:`resolve_dataset`); samples are read
    as the iterator is consumed -- LongMemEval files with bounded memory,
    whatever their size. ``ids`` keeps only those sample ids (all must exist,
    else :class:`~himga.data.DatasetError` once the file is exhausted); ``limit`` stops after
    that many samples (the rest of the file is then not read, nor checked).
    Malformed data raises :class:`~himga.data.DatasetError`. Known quirks of a file warn
    once per kind when iteration ends (:class:`~himga.data.DatasetWarning`: a count, with
    one line per quirk in ``details``), attributed to the caller's line.
    """
    benchmark = get_benchmark(name)
    if limit is not None and (isinstance(limit, bool) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    if isinstance(ids, str):
        raise TypeError(f"ids must be a collection of sample ids, not the string {ids!r}")
    wanted = None if ids is None else frozenset(ids)
    resolution = resolve_dataset(name, path=path, download=download)
    samples = _generator(benchmark.load(resolution.path, wanted))
    return _select(_summarised(samples, name, resolution.path), resolution, limit, wanted)


def _generator(samples: Iterator[Sample]) -> Generator[Sample, None, None]:
    """``samples`` as a generator (``yield from`` closes it, if it can be, when closed)."""
    yield from samples


def load_dataset(
    name: str,
    *,
    path: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    ids: Iterable[str] | None = None,
    download: bool = True,
) -> list[Sample]:
    """All samples of dataset ``name`` as a list: :func:`iter_dataset`, collected."""
    return list(iter_dataset(name, path=path, limit=limit, ids=ids, download=download))


def _select(
    samples: Generator[Sample, None, None],
    resolution: Resolution,
    limit: int | None,
    wanted: frozenset[str] | None,
) -> Iterator[Sample]:
    found: set[str] = set()
    # closing(): stopping at `limit` closes the file now, not when collected.
    with closing(samples):
        if limit == 0:
            return
        for sample in samples:
            if wanted is not None and sample.sample_id not in wanted:
                continue
            found.add(sample.sample_id)
            yield sample
            if limit is not None and len(found) >= limit:
                return
    if wanted is not None and wanted - found:
        missing = ", ".join(sorted(wanted - found))
        raise DatasetError(resolution.path, f"no sample with id {missing}", field="sample_id")


_DATA_PACKAGE = str(Path(schema.__file__).resolve().parent)
_THIS_FILE = str(Path(__file__).resolve())


def _inside(filename: str) -> bool:
    """Whether a frame of ``filename`` is the loading's own: this module or himga.data."""
    return filename == _THIS_FILE or filename.startswith(_DATA_PACKAGE)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning to the first frame outside the loading
    (this module and himga.data)."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and _inside(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    return level


def _summarised(
    samples: Generator[Sample, None, None], name: str, path: Path
) -> Generator[Sample, None, None]:
    """``samples``, with the loader's warnings collected and re-issued as one per kind."""
    found: dict[type[DatasetWarning], list[str]] = {}
    try:
        with closing(samples):
            while True:
                caught: list[warnings.WarningMessage] = []
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        sample = next(samples)
                except StopIteration:
                    return
                finally:
                    # Outside the recording context: a warning that is not the loader's
                    # is re-issued to the caller's filters, not appended to `caught`
                    # while it is being read (which looped, filling memory).
                    _sort(caught, found)
                yield sample
    finally:
        level = _caller_stacklevel()
        for category, details in found.items():
            message = (
                f"{path}: {len(details)} {category.summary}; "
                f"`himga datasets --verbose {name}` lists them"
            )
            warnings.warn(category(message, tuple(details)), stacklevel=level)


def _sort(
    caught: list[warnings.WarningMessage], found: dict[type[DatasetWarning], list[str]]
) -> None:
    for record in caught:
        if isinstance(record.message, DatasetWarning):
            found.setdefault(type(record.message), []).append(str(record.message))
        else:  # not the loader's: passed on as it was
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)

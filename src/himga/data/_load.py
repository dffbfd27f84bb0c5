"""``load_dataset`` / ``iter_dataset``: resolve a dataset, then read its samples."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing

from himga.data._errors import DatasetError
from himga.data._locomo import iter_locomo
from himga.data._longmemeval import iter_longmemeval
from himga.data._registry import get_spec
from himga.data._resolve import Resolution, resolve_dataset
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
    else :class:`DatasetError` once the file is exhausted); ``limit`` stops after
    that many samples (the rest of the file is then not read, nor checked).
    Malformed data raises :class:`DatasetError`.
    """
    spec = get_spec(name)
    if limit is not None and (isinstance(limit, bool) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    if isinstance(ids, str):
        raise TypeError(f"ids must be a collection of sample ids, not the string {ids!r}")
    wanted = None if ids is None else frozenset(ids)
    resolution = resolve_dataset(name, path=path, download=download)
    if spec.family == "locomo":
        samples = iter_locomo(resolution.path, name, wanted)
    else:
        samples = iter_longmemeval(resolution.path, name, wanted)
    return _select(samples, resolution, limit, wanted)


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

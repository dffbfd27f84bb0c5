"""The benchmark registry: entry points of the group ``himga.benchmarks`` plus
:func:`register_benchmark`, looked up by name.

An entry point's value is ``module:attr`` naming a :class:`Benchmark`, or a
zero-argument callable returning a Benchmark or an iterable of them (all the
splits of one benchmark). Entry points are loaded on the first look-up, all of
them (a callable's benchmarks are only known once it is called), and again when
``sys.path`` changes; as for memories,
``HIMGA_NO_PLUGINS=1`` keeps only himga's own. Like :mod:`._protocol`, this module
imports nothing of himga at run time but the error root, so :mod:`himga.data` can
dispatch through it.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Iterable
from importlib.metadata import entry_points

from himga._errors import HimgaError
from himga.benchmarks._protocol import Benchmark

__all__ = [
    "ENTRY_POINT_GROUP",
    "BenchmarkLoadError",
    "UnknownDatasetError",
    "benchmarks",
    "find_benchmark",
    "get_benchmark",
    "register_benchmark",
]

ENTRY_POINT_GROUP = "himga.benchmarks"
_BUILTIN_DISTRIBUTION = "himga"
VARIANT_SEPARATOR = "+"


class UnknownDatasetError(HimgaError, ValueError):
    """The dataset name is not one himga knows."""


class BenchmarkLoadError(HimgaError, ValueError):
    """A registration is broken: its entry point does not load or does not give
    benchmarks, or two registrations claim one name."""


_lock = threading.Lock()
_registered: dict[str, Benchmark] = {}
# The entry points found, with the sys.path and HIMGA_NO_PLUGINS they were found
# under: a distribution put on the path later is then picked up.
_from_entry_points: tuple[tuple[object, ...], dict[str, tuple[Benchmark, str]]] | None = None


def _as_benchmarks(loaded: object, origin: str) -> list[Benchmark]:
    # A class with every attribute as a class attribute passes isinstance too: call it.
    if not isinstance(loaded, type) and isinstance(loaded, Benchmark):
        return [loaded]
    if not callable(loaded):
        raise BenchmarkLoadError(f"{origin}: {loaded!r} is neither a Benchmark nor callable")
    try:
        made = loaded()
    except Exception as exc:
        raise BenchmarkLoadError(f"{origin}: calling {loaded!r} raised {exc!r}") from exc
    found = [made] if isinstance(made, Benchmark) else None
    if found is None and isinstance(made, Iterable):
        found = list(made)
    if found is None or not all(isinstance(b, Benchmark) for b in found):
        raise BenchmarkLoadError(
            f"{origin}: {loaded!r} returned {made!r}, not a Benchmark or an iterable of them"
        )
    return found


def _load_entry_points(third_party: bool) -> dict[str, tuple[Benchmark, str]]:
    found: dict[str, tuple[Benchmark, str]] = {}
    seen: set[tuple[str, str]] = set()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry_point.dist.name if entry_point.dist is not None else "<unknown>"
        if (not third_party and distribution != _BUILTIN_DISTRIBUTION) or (
            (entry_point.name, entry_point.value) in seen
        ):
            continue
        seen.add((entry_point.name, entry_point.value))
        origin = (
            f"benchmark entry point {entry_point.name!r} ({entry_point.value}) of {distribution!r}"
        )
        module_name, _, attr = entry_point.value.partition(":")
        try:
            loaded: object = importlib.import_module(module_name.strip())
            for part in attr.strip().split(".") if attr.strip() else ():
                loaded = getattr(loaded, part)
        except Exception as exc:
            raise BenchmarkLoadError(f"cannot load {origin}: {type(exc).__name__}: {exc}") from exc
        for benchmark in _as_benchmarks(loaded, origin):
            if benchmark.name in found and found[benchmark.name][0] is not benchmark:
                raise BenchmarkLoadError(
                    f"benchmark name {benchmark.name!r} is registered twice: by "
                    f"{found[benchmark.name][1]} and by {origin}"
                )
            found[benchmark.name] = (benchmark, origin)
    return found


def _all() -> dict[str, Benchmark]:
    global _from_entry_points
    third_party = os.environ.get("HIMGA_NO_PLUGINS", "") in ("", "0")
    key = (third_party, *sys.path)
    with _lock:
        if _from_entry_points is None or _from_entry_points[0] != key:
            _from_entry_points = (key, _load_entry_points(third_party))
        merged = {name: benchmark for name, (benchmark, _) in _from_entry_points[1].items()}
        merged.update(_registered)
        return merged


def register_benchmark(benchmark: Benchmark, *, replace: bool = False) -> None:
    """Make ``benchmark`` known under its name, in this process.

    A name already registered (here or by an entry point) is a
    :class:`BenchmarkLoadError` unless ``replace``; ``TypeError`` if ``benchmark``
    does not have the :class:`Benchmark` attributes.
    """
    if isinstance(benchmark, type) or not isinstance(benchmark, Benchmark):
        raise TypeError(f"register_benchmark: {benchmark!r} is not a Benchmark")
    if not replace and benchmark.name in _all():
        raise BenchmarkLoadError(
            f"benchmark name {benchmark.name!r} is already registered; pass replace=True"
        )
    with _lock:
        _registered[benchmark.name] = benchmark


def benchmarks() -> dict[str, Benchmark]:
    """Every known benchmark by name: himga's own first, in registration order."""
    return _all()


def get_benchmark(name: str) -> Benchmark:
    """The benchmark registered as ``name``; :class:`UnknownDatasetError` listing the known ones."""
    known = _all()
    try:
        return known[name]
    except KeyError:
        listed = ", ".join(known) or "none"
        raise UnknownDatasetError(f"unknown dataset {name!r}; known: {listed}") from None


def find_benchmark(dataset: str) -> Benchmark | None:
    """The benchmark whose rules apply to results of ``dataset``: the one of that name,
    else the one named by the part before ``+`` (``"longmemeval_oracle+distractors"``),
    else ``None``."""
    known = _all()
    return known.get(dataset) or known.get(dataset.partition(VARIANT_SEPARATOR)[0])

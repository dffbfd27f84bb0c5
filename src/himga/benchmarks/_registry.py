"""The benchmark registry: entry points of the group ``himga.benchmarks`` plus
:func:`register_benchmark`, looked up by name.

An entry point's value is ``module:attr`` naming a :class:`Benchmark`, or a
zero-argument callable returning a Benchmark or an iterable of them (all the
splits of one benchmark). himga's own entry points (its distribution ``himga``)
are the built-ins. Third-party entry points are loaded lazily -- only when a name
that is not a built-in is looked up, or every benchmark is listed -- and each in
isolation, so a broken plug-in never breaks himga or another plug-in:

* loading one (import, attribute, the callable) that raises, calls ``sys.exit``,
  gives what is not a Benchmark, or has not finished after
  :data:`PLUGIN_LOAD_TIMEOUT` seconds (it is left behind on a daemon thread) makes
  it *broken*: looking up its name raises :class:`BenchmarkLoadError` naming it,
  and listing warns one :class:`BenchmarkPluginWarning` line for it, once;
* a name that is not a non-empty string without ``+`` and blanks, a name of a
  built-in (the built-in is kept), and a name two plug-ins claim (neither is
  kept) are refused the same way, naming both sources;
* a plug-in benchmark's ``locate``, ``download``, ``guidance`` and ``load`` that
  raise anything but a :class:`~himga._errors.HimgaError` (e.g. ``DatasetError``),
  call ``sys.exit`` or return the wrong type (a ``load`` that yields no sample at
  all included) raise :class:`BenchmarkLoadError` naming the plug-in and the
  method. What cannot be bounded: a method that hangs (reading a large dataset
  legitimately takes long; Ctrl-C stops it) and ``os._exit``;
* a plug-in may look up the built-ins, or register a benchmark, while it loads.

A judge's failures are its questions' (:func:`himga.eval.batch_judge`); metrics are
checked by the metric registry (:mod:`himga.eval`).

Entry points are found again when ``sys.path`` changes; as for memories,
``HIMGA_NO_PLUGINS=1`` keeps only himga's own. Datasets are resolved and loaded through
it by :mod:`._resolve` and :mod:`._load` (:func:`~himga.benchmarks.load_dataset`).
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from himga._errors import HimgaError, HimgaWarning
from himga._registry import (
    Entry,
    Registered,
    Registry,
    cwd_importable,
    distinct,
    entry_point_origin,
    plugins_disabled,
)
from himga.benchmarks._protocol import Benchmark, Judge
from himga.data._errors import UnknownDatasetError
from himga.data.schema import Sample

if TYPE_CHECKING:
    from himga.scoring._metric import Metric, RunMetric

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_LOAD_TIMEOUT",
    "BenchmarkLoadError",
    "BenchmarkPluginWarning",
    "UnknownDatasetError",
    "benchmark_from_spec",
    "benchmarks",
    "dataset_name",
    "find_benchmark",
    "get_benchmark",
    "register_benchmark",
]

ENTRY_POINT_GROUP = "himga.benchmarks"
VARIANT_SEPARATOR = "+"
#: Seconds one third-party entry point may take to load (import and call).
PLUGIN_LOAD_TIMEOUT = 30.0

_T = TypeVar("_T")
_END = object()


class BenchmarkLoadError(HimgaError, ValueError):
    """A benchmark plug-in is broken: its entry point does not load or does not give
    benchmarks, its name is refused, or one of its methods raised, exited or returned
    the wrong type. The message is one line naming the plug-in (and the method)."""


class BenchmarkPluginWarning(HimgaWarning):
    """A broken benchmark plug-in was skipped while every benchmark was listed."""


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def failure(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    return f"raised {type(exc).__name__}: {one_line(exc)}"


@dataclass(frozen=True)
class _Plugin:
    """A third-party benchmark, its members read once, its methods guarded."""

    inner: Benchmark
    origin: str
    name: str
    description: str
    license: str
    categories: Sequence[str]
    headline_excludes: frozenset[str]
    judge: Judge | None
    metrics: Sequence[Metric | RunMetric]

    def _call(self, method: str, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except HimgaError:  # the protocol's own errors (DatasetError, DownloadError, ...)
            raise
        except (Exception, SystemExit) as exc:
            raise BenchmarkLoadError(f"{self.origin}: {method} {failure(exc)}") from exc

    def _wrong(self, method: str, value: object, expected: str) -> BenchmarkLoadError:
        return BenchmarkLoadError(
            f"{self.origin}: {method} returned {one_line(repr(value))[:80]}, not {expected}"
        )

    def locate(self, directory: Path) -> Path | None:
        found: object = self._call("locate", lambda: self.inner.locate(directory))
        if found is not None and not isinstance(found, Path):
            raise self._wrong("locate", found, "a Path or None")
        return found

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        made: object = self._call(
            "download", lambda: self.inner.download(cache, show_progress=show_progress)
        )
        if not isinstance(made, Path):
            raise self._wrong("download", made, "a Path")
        return made

    def guidance(self, cache: Path) -> str:
        text: object = self._call("guidance", lambda: self.inner.guidance(cache))
        if not isinstance(text, str):
            raise self._wrong("guidance", text, "a str")
        return text

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        made: object = self._call("load", lambda: self.inner.load(path, wanted))
        if isinstance(made, (str, bytes)) or not isinstance(made, Iterable):
            raise self._wrong("load", made, "an iterator of Samples")
        samples = iter(made)
        count = 0
        while True:
            sample: object = self._call("load", lambda: next(samples, _END))
            if sample is _END:
                if count == 0 and wanted != frozenset():
                    # A run over nothing would "succeed" with no question at all.
                    raise BenchmarkLoadError(f"{self.origin}: load yielded no sample from {path}")
                return
            count += 1
            if not isinstance(sample, Sample):
                raise BenchmarkLoadError(
                    f"{self.origin}: load yielded {one_line(repr(sample))[:80]}, not a Sample"
                )
            yield sample


def _checked(benchmark: object, origin: str) -> _Plugin:
    """``benchmark`` read into a :class:`_Plugin`; :class:`BenchmarkLoadError` if a member
    is missing or of the wrong type (accessing one may raise: that is named too)."""
    if not isinstance(benchmark, Benchmark):
        raise BenchmarkLoadError(
            f"{origin}: gave {one_line(repr(benchmark))[:80]}, not a Benchmark"
        )
    try:
        name: object = benchmark.name
        if not isinstance(name, str):
            raise BenchmarkLoadError(f"{origin}: name {name!r} is not a string")
        if not name or VARIANT_SEPARATOR in name or name != "".join(name.split()):
            raise BenchmarkLoadError(
                f"{origin}: name {name!r} is refused (empty, or holds '+' or a blank)"
            )
        texts = {"description": benchmark.description, "license": benchmark.license}
        categories: object = benchmark.categories
        excludes: object = benchmark.headline_excludes
        judge: object = benchmark.judge
        metrics: object = benchmark.metrics
    except BenchmarkLoadError:
        raise
    except (Exception, SystemExit) as exc:
        raise BenchmarkLoadError(f"{origin}: reading its members {failure(exc)}") from exc
    for member, text in texts.items():
        if not isinstance(text, str):
            raise BenchmarkLoadError(f"{origin}: {member} {text!r} is not a string")
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
        categories = None
    if not isinstance(excludes, Set):
        excludes = None
    ordered = _strings(categories)
    excluded = _strings(excludes)
    if ordered is None:
        raise BenchmarkLoadError(f"{origin}: categories {categories!r} is not a sequence of str")
    if excluded is None:
        raise BenchmarkLoadError(f"{origin}: headline_excludes {excludes!r} is not a set of str")
    if judge is not None and not isinstance(judge, Judge):
        raise BenchmarkLoadError(f"{origin}: judge {judge!r} is neither a Judge nor None")
    if isinstance(metrics, (str, bytes)) or not isinstance(metrics, Sequence):
        raise BenchmarkLoadError(f"{origin}: metrics {metrics!r} is not a sequence")
    return _Plugin(
        benchmark,
        origin,
        name,
        texts["description"],
        texts["license"],
        tuple(ordered),
        frozenset(excluded),
        judge,
        tuple(metrics),
    )


def _strings(items: Sequence[object] | Set[object] | None) -> list[str] | None:
    """``items`` if every one is a ``str``, else ``None``."""
    if items is None:
        return None
    found = [item for item in items if isinstance(item, str)]
    return found if len(found) == len(items) else None


def _as_benchmarks(loaded: object, origin: str) -> list[object]:
    # A class with every attribute as a class attribute passes isinstance too: call it.
    if not isinstance(loaded, type) and isinstance(loaded, Benchmark):
        return [loaded]
    if not callable(loaded):
        raise BenchmarkLoadError(f"{origin}: {loaded!r} is neither a Benchmark nor callable")
    try:
        made = loaded()
        if isinstance(made, Benchmark) and not isinstance(made, type):
            return [made]
        if isinstance(made, (str, bytes, dict)) or not isinstance(made, Iterable):
            raise BenchmarkLoadError(
                f"{origin}: {loaded!r} returned {one_line(repr(made))[:80]}, "
                "not a Benchmark or an iterable of them"
            )
        return list(made)
    except BenchmarkLoadError:
        raise
    except (Exception, SystemExit) as exc:
        raise BenchmarkLoadError(f"{origin}: calling {loaded!r} {failure(exc)}") from exc


def _origin(entry_point: EntryPoint) -> str:
    return entry_point_origin("benchmark", entry_point)


def resolve_entry_point(
    entry_point: EntryPoint, origin: str, error: type[HimgaError] = BenchmarkLoadError
) -> object:
    """The object an entry point's ``module:attr`` names; ``error`` naming ``origin`` if
    the import or an attribute fails (or exits)."""
    module_name, _, attr = entry_point.value.partition(":")
    try:
        loaded: object = importlib.import_module(module_name.strip())
        for part in attr.strip().split(".") if attr.strip() else ():
            loaded = getattr(loaded, part)
    except (Exception, SystemExit) as exc:
        raise error(f"cannot load {origin}: {failure(exc)}") from exc
    return loaded


def _import(entry_point: EntryPoint, origin: str) -> list[object]:
    return _as_benchmarks(resolve_entry_point(entry_point, origin), origin)


def load_isolated(
    name: str, origin: str, load: Callable[[], _T], error: type[HimgaError] = BenchmarkLoadError
) -> _T:
    """What ``load`` (one third-party entry point's loading) gives, run on a daemon thread
    within :data:`PLUGIN_LOAD_TIMEOUT`: ``error`` naming ``origin`` if it raises (an
    ``error`` of its own is passed on), exits or does not finish."""
    outcome: list[_T | BaseException] = []

    def run() -> None:
        _loading.active = True
        try:
            outcome.append(load())
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=run, name=f"himga-plugin-{name}", daemon=True)
    worker.start()
    worker.join(PLUGIN_LOAD_TIMEOUT)
    if not outcome:
        raise error(
            f"cannot load {origin}: it did not finish loading within {PLUGIN_LOAD_TIMEOUT:g} s"
        )
    (result,) = outcome
    if isinstance(result, error):
        raise result
    if isinstance(result, BaseException):
        raise error(f"cannot load {origin}: {failure(result)}") from result
    return result


def _load_builtin(entry_point: EntryPoint, origin: str) -> Iterator[tuple[str, Benchmark]]:
    for benchmark in _import(entry_point, origin):
        assert isinstance(benchmark, Benchmark)  # himga's own
        yield benchmark.name, benchmark


def _load_plugin(entry_point: EntryPoint, origin: str) -> list[tuple[str, Benchmark]]:
    """The benchmarks of one third-party entry point (:func:`load_isolated`)."""
    made = load_isolated(
        entry_point.name,
        origin,
        lambda: [_checked(made, origin) for made in _import(entry_point, origin)],
    )
    return [(plugin.name, plugin) for plugin in made]


def _same(one: Entry[Benchmark], other: Entry[Benchmark]) -> bool:
    """One benchmark object reached twice (its plug-ins are each a :class:`_Plugin`)."""
    assert isinstance(one.value, _Plugin)
    assert isinstance(other.value, _Plugin)
    return one.value.inner is other.value.inner


class _Loading(threading.local):
    """Set on the thread that loads a plug-in."""

    active = False


_loading = _Loading()
_warned: set[str] = set()
_benchmarks: Registry[str, Benchmark] = Registry(
    group=ENTRY_POINT_GROUP,
    kind="benchmark",
    error=BenchmarkLoadError,
    registered=Registered(
        BenchmarkLoadError,
        lambda name: f"benchmark name {name!r} is already registered; pass replace=True",
    ),
    load_builtin=_load_builtin,
    load_plugin=_load_plugin,
    broken_key=lambda entry_point: entry_point.name,
    reserved=lambda name, builtins: builtins[name].origin if name in builtins else None,
    same=_same,
    refused=lambda name, origin, where: (
        f"{origin}: benchmark name {name!r} is refused: it is himga's built-in ({where})"
    ),
    twice=lambda name, origins: (
        f"benchmark name {name!r} is registered twice: by {' and by '.join(origins)}; "
        "neither is used"
    ),
    select=distinct,
    # A plug-in looking benchmarks up while it loads (to derive one from a built-in)
    # sees the built-ins and the registered ones, not the plug-ins being loaded.
    plugins_off=lambda: plugins_disabled() or _loading.active,
)


def _builtin() -> dict[str, Entry[Benchmark]]:
    return _benchmarks.builtins()


def warn_skipped(line: str) -> None:
    """Warn that a broken plug-in (or a benchmark's refused part) is skipped, once per
    process: :class:`BenchmarkPluginWarning` ``"skipped: <line>"``."""
    if line not in _warned:
        _warned.add(line)
        warnings.warn(BenchmarkPluginWarning(f"skipped: {line}"), stacklevel=3)


def _all() -> dict[str, Benchmark]:
    """Every benchmark, the broken plug-ins warned (once each)."""
    return _benchmarks.entries(warn_skipped)


def _lookup(name: str) -> Benchmark | None:
    """The benchmark ``name``, loading plug-ins only if it is no built-in;
    :class:`BenchmarkLoadError` if the plug-in that gives it is broken."""
    return _benchmarks.lookup(name)


def register_benchmark(benchmark: Benchmark, *, replace: bool = False) -> None:
    """Make ``benchmark`` known under its name, in this process.

    A name already registered (here or by an entry point) is a
    :class:`BenchmarkLoadError` unless ``replace``; ``TypeError`` if ``benchmark``
    does not have the :class:`Benchmark` attributes or its name is not a string.
    """
    if isinstance(benchmark, type) or not isinstance(benchmark, Benchmark):
        raise TypeError(f"register_benchmark: {benchmark!r} is not a Benchmark")
    if not isinstance(benchmark.name, str) or not benchmark.name:
        raise TypeError(f"register_benchmark: name {benchmark.name!r} is not a non-empty string")
    _benchmarks.registered.add(
        [(benchmark.name, benchmark)], replace=replace, taken=lambda name: name in _all()
    )


#: The benchmarks ``module:attr`` specs gave in this process, by spec.
_from_specs: dict[str, Benchmark] = {}
_specs_lock = threading.Lock()


def benchmark_from_spec(spec: str) -> Benchmark:
    """The benchmark a ``module:attr`` spec names (``--dataset mypackage.bench:BENCH``),
    as ``--memory`` takes a memory: a :class:`Benchmark`, or a zero-argument callable
    giving one (or an iterable holding exactly one). Loaded and checked as a plug-in is
    (on its own thread, within :data:`PLUGIN_LOAD_TIMEOUT`), then registered under its
    own name in this process, once per spec; the current directory is importable, as
    for a ``module:attr`` memory. :class:`BenchmarkLoadError` naming the spec
    for a malformed spec, a failing import, no or several benchmarks, or a name another
    benchmark has."""
    module_name, _, attr = spec.partition(":")
    if not module_name.strip() or not attr.strip() or ":" in attr:
        raise BenchmarkLoadError(f"malformed dataset spec {spec!r}: expected 'module:attr'")
    origin = f"dataset spec {spec!r}"
    cwd_importable()
    with _specs_lock:
        if spec in _from_specs:
            return _from_specs[spec]
        entry_point = EntryPoint(name=spec, value=spec.strip(), group=ENTRY_POINT_GROUP)
        made = load_isolated(
            spec, origin, lambda: [_checked(one, origin) for one in _import(entry_point, origin)]
        )
        if len(made) != 1:
            names = ", ".join(repr(plugin.name) for plugin in made) or "none"
            raise BenchmarkLoadError(f"{origin} gives {len(made)} benchmarks ({names}), not one")
        (benchmark,) = made
        register_benchmark(benchmark)
        _from_specs[spec] = benchmark
        return benchmark


def dataset_name(dataset: str) -> str:
    """``dataset`` itself, or the name of the benchmark a ``module:attr`` spec gives
    (:func:`benchmark_from_spec`, which registers it)."""
    return benchmark_from_spec(dataset).name if ":" in dataset else dataset


def benchmarks() -> dict[str, Benchmark]:
    """Every known benchmark by name: himga's own first, in registration order. Broken
    plug-ins are left out, each warned once (:class:`BenchmarkPluginWarning`)."""
    return _all()


def get_benchmark(name: str) -> Benchmark:
    """The benchmark registered as ``name``; :class:`UnknownDatasetError` listing the known
    ones, :class:`BenchmarkLoadError` if the plug-in that registers it is broken."""
    found = _lookup(name)
    if found is not None:
        return found
    known = _all()
    listed = ", ".join(known) or "none"
    broken = _benchmarks.plugins().broken
    skipped = f"; broken plug-ins skipped: {', '.join(map(repr, broken))}" if broken else ""
    raise UnknownDatasetError(f"unknown dataset {name!r}; known: {listed}{skipped}")


def find_benchmark(dataset: str) -> Benchmark | None:
    """The benchmark whose rules apply to results of ``dataset``: the one of that name,
    else the one named by the part before ``+`` (``"longmemeval_oracle+distractors"``),
    else ``None`` (also when the plug-in that gives it is broken: then warned)."""
    for name in (dataset, dataset.partition(VARIANT_SEPARATOR)[0]):
        try:
            found = _lookup(name)
        except BenchmarkLoadError as exc:
            warn_skipped(str(exc))
            return None
        if found is not None:
            return found
    return None

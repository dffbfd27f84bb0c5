"""One registry of named entries, shared by benchmarks, judge prompts and metrics.

:class:`Registered` holds what :func:`register_*` made known in this process, with the
duplicate rule: a key already known is the registry's own error, naming it, unless
``replace``. :class:`Registry` adds entry points of one group: himga's own
distribution's are the built-ins (read once), every other distribution's are plug-ins
(read again when ``sys.path`` changes, skipped under ``HIMGA_NO_PLUGINS=1``). A plug-in
that is broken, claims a built-in's key, or claims a key another plug-in claims (neither
is kept) is refused with one line per key. A key is looked up among the registered
entries, then the built-ins, then the plug-ins (a refused key raises its line); listing
merges them in the reverse order, each refused line warned once.

How an entry point is loaded and checked, what makes two claims the same, and every
message are the caller's (:mod:`himga.benchmarks._registry`,
:mod:`himga.benchmarks._judge_prompts`, :mod:`himga.eval._metric_registry`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

__all__ = [
    "BUILTIN_DISTRIBUTION",
    "Entry",
    "Found",
    "Registered",
    "Registry",
    "cwd_importable",
    "distinct",
    "entry_point_origin",
    "is_builtin",
    "plugins_disabled",
]

#: The distribution whose entry points are the built-ins.
BUILTIN_DISTRIBUTION = "himga"

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class Entry(Generic[V]):
    """A value and the origin (entry point) that gave it."""

    value: V
    origin: str


@dataclass(frozen=True)
class Found(Generic[K, V]):
    """What the plug-ins gave: the kept entries, and one line per refused key."""

    entries: dict[K, Entry[V]] = field(default_factory=dict)
    broken: dict[K, str] = field(default_factory=dict)


def plugins_disabled() -> bool:
    """``HIMGA_NO_PLUGINS`` is set (to anything but ``0``): only himga's own are used."""
    return os.environ.get("HIMGA_NO_PLUGINS", "") not in ("", "0")


def cwd_importable() -> None:
    """Make the current directory importable, as ``python -m`` does, so that a
    ``module:attr`` spec (a memory, a dataset, a fake LLM's responder) may name a module
    in it."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def is_builtin(entry_point: EntryPoint) -> bool:
    return entry_point.dist is not None and entry_point.dist.name == BUILTIN_DISTRIBUTION


def entry_point_origin(kind: str, entry_point: EntryPoint) -> str:
    """How errors and warnings name an entry point of ``kind`` (``"benchmark"``): its
    name, ``module:attr`` and distribution."""
    distribution = entry_point.dist.name if entry_point.dist is not None else "<unknown>"
    return f"{kind} entry point {entry_point.name!r} ({entry_point.value}) of {distribution!r}"


def distinct(found: Iterable[EntryPoint]) -> Iterator[EntryPoint]:
    """``found`` without repeats of one ``(name, value)`` (a distribution found twice)."""
    seen: set[tuple[str, str]] = set()
    for entry_point in found:
        if (entry_point.name, entry_point.value) not in seen:
            seen.add((entry_point.name, entry_point.value))
            yield entry_point


class Registered(Generic[K, V]):
    """What was registered in this process, by key, under its own lock (so that a
    plug-in may register while another thread holds a registry's loading lock)."""

    def __init__(self, error: type[Exception], duplicate: Callable[[K], str]) -> None:
        self.lock = threading.Lock()
        self.entries: dict[K, V] = {}
        self._error = error
        self._duplicate = duplicate

    def duplicate(self, key: K) -> Exception:
        """The error for registering ``key`` again without ``replace``."""
        return self._error(self._duplicate(key))

    def add(
        self, items: Iterable[tuple[K, V]], *, replace: bool, taken: Callable[[K], bool]
    ) -> None:
        """Register every item, or none: :meth:`duplicate` for the first key ``taken``
        unless ``replace``. ``taken`` runs outside the lock (it may load plug-ins)."""
        pending = list(items)
        if not replace:
            for key, _ in pending:
                if taken(key):
                    raise self.duplicate(key)
        with self.lock:
            self.entries.update(pending)


class Registry(Generic[K, V]):
    """Registered entries, built-in and third-party entry points of ``group``.

    ``load_builtin`` and ``load_plugin`` give the ``(key, value)`` pairs of one entry
    point told its origin (``load_plugin`` raises ``error`` when it is broken: the line
    is kept under ``broken_key(entry_point)``); ``reserved(key)`` is the origin of the
    built-in a plug-in's key would shadow, if any; ``same`` tells a claim repeated by
    one plug-in from a second claimant; ``refused`` and ``twice`` write the lines.
    """

    def __init__(
        self,
        *,
        group: str,
        kind: str,
        error: type[Exception],
        registered: Registered[K, V],
        load_builtin: Callable[[EntryPoint, str], Iterable[tuple[K, V]]],
        load_plugin: Callable[[EntryPoint, str], Iterable[tuple[K, V]]],
        broken_key: Callable[[EntryPoint], K],
        reserved: Callable[[K, dict[K, Entry[V]]], str | None],
        same: Callable[[Entry[V], Entry[V]], bool],
        refused: Callable[[K, str, str], str],
        twice: Callable[[K, list[str]], str],
        select: Callable[[Iterable[EntryPoint]], Iterable[EntryPoint]] = iter,
        plugins_off: Callable[[], bool] = plugins_disabled,
    ) -> None:
        self.group = group
        self.kind = kind
        self.error = error
        self.registered = registered
        self._load_builtin = load_builtin
        self._load_plugin = load_plugin
        self._broken_key = broken_key
        self._reserved = reserved
        self._same = same
        self._refused = refused
        self._twice = twice
        self._select = select
        self._plugins_off = plugins_off
        # Held while either cache is filled, plug-ins' loading included.
        self._lock = threading.Lock()
        self._builtins: dict[K, Entry[V]] | None = None
        self._plugins: tuple[tuple[str, ...], Found[K, V]] | None = None

    def origin(self, entry_point: EntryPoint) -> str:
        return entry_point_origin(self.kind, entry_point)

    def _find_builtins(self) -> dict[K, Entry[V]]:
        found: dict[K, Entry[V]] = {}
        for entry_point in entry_points(group=self.group):
            if is_builtin(entry_point):
                origin = self.origin(entry_point)
                for key, value in self._load_builtin(entry_point, origin):
                    found.setdefault(key, Entry(value, origin))
        return found

    def _find_plugins(self, builtins: dict[K, Entry[V]]) -> Found[K, V]:
        claims: dict[K, list[Entry[V]]] = {}
        broken: dict[K, str] = {}
        third_party = (ep for ep in entry_points(group=self.group) if not is_builtin(ep))
        for entry_point in self._select(third_party):
            origin = self.origin(entry_point)
            try:
                made = list(self._load_plugin(entry_point, origin))
            except self.error as exc:
                broken[self._broken_key(entry_point)] = str(exc)
                continue
            for key, value in made:
                where = self._reserved(key, builtins)
                if where is not None:
                    broken[key] = self._refused(key, origin, where)
                    continue
                claim = Entry(value, origin)
                same_key = claims.setdefault(key, [])
                if not any(self._same(other, claim) for other in same_key):
                    same_key.append(claim)
        kept: dict[K, Entry[V]] = {}
        for key, claimants in claims.items():
            if len(claimants) == 1:
                kept[key] = claimants[0]
            else:
                broken[key] = self._twice(key, [claim.origin for claim in claimants])
        return Found(kept, broken)

    def builtins(self) -> dict[K, Entry[V]]:
        """himga's own entries, found once."""
        if self._builtins is not None:  # filled before any plug-in loads
            return self._builtins
        with self._lock:
            if self._builtins is None:
                self._builtins = self._find_builtins()
            return self._builtins

    def plugins(self) -> Found[K, V]:
        """The plug-ins' entries and refused lines (none when plug-ins are off), found
        again whenever ``sys.path`` changes."""
        if self._plugins_off():
            return Found()
        builtins = self.builtins()
        key = tuple(sys.path)
        with self._lock:
            if self._plugins is None or self._plugins[0] != key:
                self._plugins = (key, self._find_plugins(builtins))
            return self._plugins[1]

    def lookup(self, key: K) -> V | None:
        """The entry ``key``: registered, else built-in (no plug-in is loaded), else a
        plug-in's; ``error`` with its line if it was refused; ``None`` if unknown."""
        registered = self.registered.entries
        if key in registered:
            return registered[key]
        builtins = self.builtins()
        if key in builtins:
            return builtins[key].value
        plugins = self.plugins()
        if key in plugins.entries:
            return plugins.entries[key].value
        if key in plugins.broken:
            raise self.error(plugins.broken[key])
        return None

    def entries(self, warn: Callable[[str], None]) -> dict[K, V]:
        """Every entry: built-ins first, then plug-ins, then registered ones (a later one
        replacing an earlier of its key); each refused line passed to ``warn``."""
        plugins = self.plugins()
        for line in dict.fromkeys(plugins.broken.values()):
            warn(line)
        merged = {key: entry.value for key, entry in self.builtins().items()}
        merged.update((key, entry.value) for key, entry in plugins.entries.items())
        merged.update(self.registered.entries)
        return merged

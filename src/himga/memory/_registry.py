"""Plug-in discovery and spec resolution: memory factories by registered name or ``module:attr``."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import Distribution, PackageNotFoundError, distributions, entry_points
from importlib.metadata import distribution as find_distribution
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from himga._errors import HimgaError
from himga._redact import redact_arguments
from himga._registry import BUILTIN_DISTRIBUTION as BUILTIN_DISTRIBUTION
from himga._registry import cwd_importable, plugins_disabled
from himga.memory._protocol import BaseMemory

__all__ = [
    "ENTRY_POINT_GROUP",
    "MemoryArgumentError",
    "MemoryFactory",
    "MemoryLoadError",
    "MemoryPlugin",
    "MemoryProvenance",
    "PluginConflictError",
    "PluginImportError",
    "ResolvedMemory",
    "available_memories",
    "load_memory",
    "memory_provenance",
    "parse_memory_arguments",
    "resolve_memory",
]

ENTRY_POINT_GROUP = "himga.memories"
# The built-in memories are the entry points of himga's own distribution
# (BUILTIN_DISTRIBUTION), registered exactly like third-party ones; HIMGA_NO_PLUGINS=1
# keeps only these. Unlike the other registries (himga._registry.Registry), memories are
# listed from entry-point metadata without importing any of them, so a conflict cannot
# be settled by loading: two distributions claiming one name raise PluginConflictError
# when that name is listed or loaded.

MemoryFactory = Callable[[], BaseMemory]
"""A zero-argument callable returning a fresh memory (a memory class is one)."""


class MemoryLoadError(HimgaError):
    """A memory name or ``module:attr`` spec could not be resolved to a factory."""


class PluginImportError(MemoryLoadError):
    """Importing a plug-in's module raised; the original error is the ``__cause__``."""


class PluginConflictError(MemoryLoadError):
    """Two installed distributions register a memory under the same name."""


class MemoryArgumentError(MemoryLoadError):
    """A ``KEY=VALUE`` memory argument is malformed, repeated, or refused by the factory."""


@dataclass(frozen=True, slots=True)
class MemoryPlugin:
    """A registered memory: its name, its ``module:attr`` spec, who registered it, and the
    ``extras`` of that distribution it needs (its entry point's ``[extra]``).

    Listing plug-ins never imports them; :meth:`load` does.
    """

    name: str
    spec: str
    distribution: str
    version: str | None = None
    extras: tuple[str, ...] = ()

    @property
    def installed(self) -> bool:
        """Whether every distribution its ``extras`` require is installed (read from
        package metadata: nothing is imported; version bounds are not checked)."""
        try:
            requirements = find_distribution(self.distribution).requires or []
        except PackageNotFoundError:
            return not self.extras
        return all(
            _installed(name)
            for requirement in requirements
            if (name := _required_by(requirement, self.extras)) is not None
        )

    def load(self) -> MemoryFactory:
        """Import the plug-in and return its factory (see :func:`load_memory`)."""
        return _load_spec(self.spec, origin=f"memory {self.name!r} of {self.distribution!r}")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _required_by(requirement: str, extras: tuple[str, ...]) -> str | None:
    """The distribution ``requirement`` names, if one of ``extras`` requires it."""
    spec, _, marker = requirement.partition(";")
    extra = _EXTRA_MARKER.search(marker)
    name = _NAME.match(spec.strip())
    if extra is None or name is None or extra.group(1) not in extras:
        return None
    return name.group(0)


def _installed(name: str) -> bool:
    try:
        find_distribution(name)
    except PackageNotFoundError:
        return False
    return True


def _registered() -> dict[str, list[MemoryPlugin]]:
    claims: dict[str, list[MemoryPlugin]] = {}
    include_third_party = not plugins_disabled()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry_point.dist.name if entry_point.dist is not None else "<unknown>"
        if not include_third_party and distribution != BUILTIN_DISTRIBUTION:
            continue
        version = entry_point.dist.version if entry_point.dist is not None else None
        spec = f"{entry_point.module}:{entry_point.attr}"
        extras = tuple(entry_point.extras)
        plugin = MemoryPlugin(entry_point.name, spec, distribution, version, extras)
        same_name = claims.setdefault(entry_point.name, [])
        if plugin not in same_name:
            same_name.append(plugin)
    return claims


def _unique(name: str, plugins: list[MemoryPlugin]) -> MemoryPlugin:
    if len(plugins) > 1:
        who = " and ".join(f"{p.distribution!r} ({p.spec})" for p in plugins)
        raise PluginConflictError(
            f"memory name {name!r} is registered by more than one distribution: {who}; "
            f"uninstall one, select it by its module:attr spec, or set HIMGA_NO_PLUGINS=1 "
            f"to use only himga's built-in memories"
        )
    return plugins[0]


def available_memories() -> dict[str, MemoryPlugin]:
    """Every registered memory by name, sorted, without importing any of them.

    Built-ins come from himga's own entry points; third-party plug-ins are
    included unless ``HIMGA_NO_PLUGINS=1``. Raises :class:`PluginConflictError`
    if two distributions claim one name.
    """
    return {name: _unique(name, plugins) for name, plugins in sorted(_registered().items())}


def load_memory(name_or_spec: str) -> MemoryFactory:
    """The memory factory for a registered name (``"null"``) or a ``"module:attr"`` spec.

    Only the selected plug-in is imported. Raises :class:`MemoryLoadError` for an
    unknown name, a malformed spec, a missing module or attribute, or an object
    that is not callable; an error raised while importing the plug-in's module is
    chained (``__cause__``) and quoted in the message, never swallowed.
    """
    if ":" in name_or_spec:
        return _load_spec(name_or_spec, origin=f"spec {name_or_spec!r}")
    claims = _registered()
    if name_or_spec not in claims:
        known = ", ".join(sorted(claims)) or "none"
        raise MemoryLoadError(
            f"unknown memory {name_or_spec!r}: expected a registered name "
            f"(registered: {known}) or a module:attr spec such as 'himga.memory:NullMemory'"
        )
    return _unique(name_or_spec, claims[name_or_spec]).load()


def _load_spec(spec: str, *, origin: str) -> MemoryFactory:
    module_name, _, attr_path = (part.strip() for part in spec.partition(":"))
    if not module_name or not attr_path or ":" in attr_path:
        raise MemoryLoadError(f"malformed {origin}: expected 'module:attr'")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise MemoryLoadError(
            f"cannot load {origin}: {module_name!r} is not a module name; give the module's "
            f"dotted import path (e.g. mypackage.memory), importable from the current "
            f"directory ({os.getcwd()}) or an installed package, not a file path"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            exc.name == module_name or module_name.startswith(exc.name + ".")
        ):
            raise MemoryLoadError(
                f"cannot load {origin}: no module named {exc.name!r} (the module must be "
                f"importable from the current directory, {os.getcwd()}, a directory on "
                f"PYTHONPATH, or installed)"
            ) from exc
        raise _import_failed(origin, module_name, exc) from exc
    except Exception as exc:
        raise _import_failed(origin, module_name, exc) from exc
    loaded: object = module
    for attr in attr_path.split("."):
        try:
            loaded = getattr(loaded, attr)
        except AttributeError as exc:
            raise MemoryLoadError(
                f"cannot load {origin}: module {module_name!r} has no attribute {attr_path!r}"
            ) from exc
    if not callable(loaded):
        raise MemoryLoadError(
            f"cannot load {origin}: {loaded!r} is not callable (expected a memory class "
            f"or a zero-argument factory)"
        )
    factory: MemoryFactory = loaded
    return factory


def _import_failed(origin: str, module_name: str, exc: Exception) -> PluginImportError:
    # The plug-in's own import failed (a dependency is missing, its code raised):
    # quote the original error so it is never mistaken for "unknown memory".
    return PluginImportError(
        f"cannot load {origin}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
    )


@dataclass(frozen=True, slots=True)
class MemoryProvenance:
    """Where a memory's code comes from: its distribution and a hash of its source.

    ``source_sha256`` covers the module files named in ``files`` -- the modules
    themselves, or every ``.py`` file of their top-level packages when the
    distribution was installed from a local path (editable or not), since such
    code changes without its version changing. ``distribution`` and
    ``version`` are ``None`` for code that no installed distribution provides
    (a module in the current directory).
    """

    distribution: str | None
    version: str | None
    source_sha256: str
    files: tuple[str, ...]


def memory_provenance(modules: Iterable[str]) -> MemoryProvenance:
    """The provenance of the imported ``modules`` (e.g. a factory's and its class's).

    A module that is not imported, or has no file, contributes only its name. Each
    file is hashed under its path relative to the directory it is imported from
    (``pkg/sub/mod.py``), never its absolute path: identical code in two clones, on
    two machines or in a moved checkout has one ``source_sha256``.
    """
    names = sorted(set(modules))
    distribution: Distribution | None = None
    files: dict[Path, str] = {}
    digest = hashlib.sha256()
    for name in names:
        # The names are hashed too: a module without a file (``__main__`` of a
        # notebook, a dynamically made one) is then identified by its name alone.
        digest.update(name.encode("utf-8") + b"\0")
        module = sys.modules.get(name)
        if module is None:
            continue
        module_file = getattr(module, "__file__", None)
        provider = _distribution_of(name.partition(".")[0], module_file)
        distribution = distribution or provider
        if provider is not None and _installed_from_path(provider):
            top = sys.modules.get(name.partition(".")[0], module)
            for directory in getattr(top, "__path__", ()):
                root = Path(directory).resolve().parent
                for path in Path(directory).rglob("*.py"):
                    files.setdefault(path.resolve(), _relative(path.resolve(), root))
        if module_file:
            path = Path(module_file).resolve()
            files.setdefault(path, _import_name(path, name, hasattr(module, "__path__")))
    ordered = sorted(files, key=files.__getitem__)
    for path in ordered:
        digest.update(files[path].encode("utf-8", "surrogateescape") + b"\0")
        digest.update(path.read_bytes())
    return MemoryProvenance(
        distribution=None if distribution is None else distribution.metadata["Name"],
        version=None if distribution is None else distribution.version,
        source_sha256=digest.hexdigest(),
        files=tuple(str(path) for path in ordered),
    )


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name


def _import_name(path: Path, module: str, package: bool) -> str:
    """``path`` (the file of ``module``) relative to the directory it is imported from:
    ``a/b/c.py`` for module ``a.b.c``, ``a/b/__init__.py`` for package ``a.b``."""
    depth = module.count(".") + (1 if package else 0)
    parents = path.parents
    return _relative(path, parents[depth]) if depth < len(parents) else path.name


@functools.cache
def _packages() -> Mapping[str, list[str]]:
    from importlib.metadata import packages_distributions

    return packages_distributions()


def _distribution_of(top_level: str, module_file: str | None) -> Distribution | None:
    for name in _packages().get(top_level, []):
        try:
            return find_distribution(name)
        except PackageNotFoundError:
            continue
    # An editable install records only its .pth file: match the project directory instead.
    if module_file is not None:
        where = Path(module_file).resolve()
        for candidate in _path_installed():
            root = _local_root(candidate)
            if root is not None and where.is_relative_to(root):
                return candidate
    return None


@functools.cache
def _path_installed() -> tuple[Distribution, ...]:
    return tuple(d for d in distributions() if _local_root(d) is not None)


def _local_root(distribution: Distribution) -> Path | None:
    """PEP 610: the local directory a distribution was installed from (``direct_url.json``
    with a ``file:`` URL), ``None`` for an install from an index or an archive URL."""
    text = distribution.read_text("direct_url.json")
    if not text:
        return None
    try:
        record = json.loads(text)
        url = record.get("url", "")
    except (json.JSONDecodeError, AttributeError):
        return None
    if not isinstance(url, str) or not url.startswith("file:") or "dir_info" not in record:
        return None
    return Path(url2pathname(urlparse(url).path)).resolve()


def _installed_from_path(distribution: Distribution) -> bool:
    return _local_root(distribution) is not None


@dataclass(frozen=True, slots=True)
class ResolvedMemory:
    """A memory spec resolved to its factory, with what identifies it in a run manifest.

    ``spec`` is as given (a registered name or ``module:attr``); ``target`` the
    ``module:attr`` it names; ``name`` the registered name, if it was one;
    ``arguments`` the constructor keyword arguments, bound into ``factory``
    (the loaded callable itself when there are none).
    """

    spec: str
    target: str
    name: str | None
    factory: MemoryFactory
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def create(self) -> BaseMemory:
        """A new memory from ``factory``; :class:`MemoryArgumentError` if it refuses the
        arguments (or raises), naming the spec."""
        try:
            return self.factory()
        except Exception as exc:
            arguments = redact_arguments(self.arguments)
            given = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
            with_args = f" with {given}" if given else ""
            raise MemoryArgumentError(
                f"cannot create memory {self.spec!r}{with_args}: {type(exc).__name__}: {exc}"
            ) from exc


def parse_memory_arguments(pairs: Sequence[str]) -> dict[str, Any]:
    """``["k=5", "name=x"]`` as ``{"k": 5, "name": "x"}``: each value is parsed as JSON
    when it parses, else kept as the string (:func:`resolve_memory` then types them by
    the memory's annotations). A malformed pair or a repeated key raises
    :class:`MemoryArgumentError`."""
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        key = key.strip()
        if not equals or not key.isidentifier():
            raise MemoryArgumentError(
                f"memory argument {pair!r}: expected KEY=VALUE with KEY a Python identifier"
            )
        if key in arguments:
            raise MemoryArgumentError(f"memory argument {key!r} is given twice")
        try:
            arguments[key] = json.loads(text)
        except json.JSONDecodeError:
            arguments[key] = text
    return arguments


def resolve_memory(spec: str, arguments: Mapping[str, Any] | None = None) -> ResolvedMemory:
    """Resolve ``spec`` -- a registered name or ``module:attr`` -- as every ``himga`` command does.

    The current directory is importable, as with ``python -m``, so a memory in
    ``./mymemory.py`` is ``mymemory:MyMemory``. ``arguments`` are passed to the
    factory as keyword arguments by :meth:`ResolvedMemory.create`. Raises what
    :func:`load_memory` raises.
    """
    cwd_importable()
    bound = MappingProxyType(dict(arguments or {}))
    name: str | None = None
    target = spec
    if ":" not in spec:
        loaded = load_memory(spec)
        name, target = spec, _unique(spec, _registered()[spec]).spec
    else:
        loaded = load_memory(spec)
    bound = MappingProxyType(_typed_arguments(spec, loaded, bound))
    factory = functools.partial(loaded, **bound) if bound else loaded
    return ResolvedMemory(spec=spec, target=target, name=name, factory=factory, arguments=bound)


# Bare words a shell user types for a boolean or None; not JSON, so they arrive as strings.
_BOOLEAN_WORDS = {"true": True, "false": False}
_NONE_WORDS = frozenset({"none", "null"})


def _typed_arguments(spec: str, factory: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against the annotations of ``factory``'s parameters.

    ``--memory-arg`` values arrive parsed as JSON or as strings, and ``'False'`` is a
    true string: for a parameter annotated ``bool`` (or ``bool | None``) the words
    ``true`` / ``false`` (any case; ``none`` / ``null`` when it takes ``None``) become
    the boolean, any other value is refused. ``true`` / ``false`` given to a
    parameter annotated ``int`` or ``float`` are refused (Python would take them for
    1 or 0), and so is one of those words as a string where the parameter may take a
    boolean or ``None`` as well as text, or its type cannot be read: it is ambiguous.
    :class:`MemoryArgumentError` names the argument.
    """
    typed = dict(arguments)
    for key, value in arguments.items():
        admitted = _admitted_types(_annotation(factory, key))
        shown = f"memory argument {key}={_shown(value)}"
        numbers = (admitted or set()) - {type(None)}
        if isinstance(value, bool) and numbers and numbers <= {int, float}:
            names = " or ".join(sorted(number.__name__ for number in numbers))
            raise MemoryArgumentError(
                f"{shown}: memory {spec!r} takes a number ({names}) for {key!r}, not a boolean"
            )
        if admitted is not None and bool in admitted and admitted <= {bool, type(None)}:
            typed[key] = _boolean(spec, key, value, shown, type(None) in admitted)
        elif isinstance(value, str) and _may_mean_other_than_text(value, admitted):
            raise MemoryArgumentError(
                f"{shown}: ambiguous, memory {spec!r} may take a boolean or None for {key!r} "
                f"(or himga cannot read its type): write {key}=true, {key}=false or "
                f"{key}=null (JSON)"
            )
    return typed


def _may_mean_other_than_text(value: str, admitted: set[type] | None) -> bool:
    """Whether the bare word ``value`` may mean a boolean or ``None`` that the parameter
    (of the ``admitted`` types, ``None`` when unknown) may take."""
    word = value.strip().lower()
    if word in _BOOLEAN_WORDS:
        return admitted is None or bool in admitted
    if word in _NONE_WORDS:
        return admitted is None or type(None) in admitted
    return False


def _boolean(spec: str, key: str, value: Any, shown: str, optional: bool) -> bool | None:
    if isinstance(value, bool) or (value is None and optional):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[word]
    if optional and word in _NONE_WORDS:
        return None
    raise MemoryArgumentError(
        f"{shown}: memory {spec!r} takes a boolean for {key!r}: true or false"
        f"{' (or null)' if optional else ''}"
    )


def _shown(value: Any) -> str:
    """A value as the user wrote it: JSON for what parsed, the bare text for a string."""
    return value if isinstance(value, str) else json.dumps(value)


def _annotation(factory: Any, name: str) -> Any:
    """The annotation of ``factory``'s parameter ``name`` (a class: its ``__init__``'s),
    evaluated; ``None`` when there is none or it does not resolve.

    Each one is evaluated alone: one annotation naming a type imported only for type
    checkers must not hide the others (``typing.get_type_hints`` fails whole)."""
    if isinstance(factory, type):  # the __init__ the class has, its own or inherited
        factory = next(vars(c)["__init__"] for c in factory.__mro__ if "__init__" in vars(c))
    try:
        raw = inspect.get_annotations(factory).get(name)
        if isinstance(raw, str):  # postponed (``from __future__ import annotations``)
            # what typing.get_type_hints does, for this one annotation
            raw = eval(raw, vars(sys.modules[factory.__module__]))
    except Exception:
        return None
    return raw


def _admitted_types(annotation: Any) -> set[type] | None:
    """The plain types an annotation admits (``bool | None``: ``{bool, NoneType}``);
    ``None`` when it is absent, ``Any``, or not made of plain types only."""
    if annotation is None or annotation is Any:
        return None
    if annotation is type(None):
        return {type(None)}
    if isinstance(annotation, type):
        return {annotation}
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        admitted: set[type] = set()
        for member in typing.get_args(annotation):
            member_types = _admitted_types(member)
            if member_types is None:
                return None
            admitted |= member_types
        return admitted
    return None

"""Plug-in discovery: memory factories registered under the ``himga.memories`` entry points."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from himga.memory._protocol import BaseMemory

__all__ = [
    "ENTRY_POINT_GROUP",
    "MemoryFactory",
    "MemoryLoadError",
    "MemoryPlugin",
    "PluginConflictError",
    "PluginImportError",
    "available_memories",
    "load_memory",
]

ENTRY_POINT_GROUP = "himga.memories"
# The built-in memories are the entry points of himga's own distribution, registered
# exactly like third-party ones; HIMGA_NO_PLUGINS=1 keeps only these.
_BUILTIN_DISTRIBUTION = "himga"

MemoryFactory = Callable[[], BaseMemory]
"""A zero-argument callable returning a fresh memory (a memory class is one)."""


class MemoryLoadError(Exception):
    """A memory name or ``module:attr`` spec could not be resolved to a factory."""


class PluginImportError(MemoryLoadError):
    """Importing a plug-in's module raised; the original error is the ``__cause__``."""


class PluginConflictError(MemoryLoadError):
    """Two installed distributions register a memory under the same name."""


@dataclass(frozen=True, slots=True)
class MemoryPlugin:
    """A registered memory: its name, its ``module:attr`` spec and who registered it.

    Listing plug-ins never imports them; :meth:`load` does.
    """

    name: str
    spec: str
    distribution: str

    def load(self) -> MemoryFactory:
        """Import the plug-in and return its factory (see :func:`load_memory`)."""
        return _load_spec(self.spec, origin=f"memory {self.name!r} of {self.distribution!r}")


def _plugins_enabled() -> bool:
    return os.environ.get("HIMGA_NO_PLUGINS", "") in ("", "0")


def _registered() -> dict[str, list[MemoryPlugin]]:
    claims: dict[str, list[MemoryPlugin]] = {}
    include_third_party = _plugins_enabled()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry_point.dist.name if entry_point.dist is not None else "<unknown>"
        if not include_third_party and distribution != _BUILTIN_DISTRIBUTION:
            continue
        plugin = MemoryPlugin(entry_point.name, entry_point.value, distribution)
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
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            exc.name == module_name or module_name.startswith(exc.name + ".")
        ):
            raise MemoryLoadError(f"cannot load {origin}: no module named {exc.name!r}") from exc
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

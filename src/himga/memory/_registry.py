"""Placeholder: being written (issue 2, plug-in discovery)."""

from typing import Any


class MemoryLoadError(Exception):
    pass


class PluginConflictError(MemoryLoadError):
    pass


def available_memories() -> Any:
    raise NotImplementedError


def load_memory(spec: str) -> Any:
    raise NotImplementedError

"""Memory systems: the interface, the null baseline, the reference memories and plug-in loading."""

from himga.memory._bm25 import BM25Memory
from himga.memory._full import FullContextMemory
from himga.memory._keyword import KeywordMemory
from himga.memory._magma import MagmaMemory, MagmaPaperMemory
from himga.memory._null import NullMemory
from himga.memory._protocol import BaseMemory, Hit, SearchableMemory
from himga.memory._registry import (
    MemoryFactory,
    MemoryLoadError,
    MemoryPlugin,
    PluginConflictError,
    PluginImportError,
    available_memories,
    load_memory,
)

__all__ = [
    "BM25Memory",
    "BaseMemory",
    "FullContextMemory",
    "Hit",
    "KeywordMemory",
    "MagmaMemory",
    "MagmaPaperMemory",
    "MemoryFactory",
    "MemoryLoadError",
    "MemoryPlugin",
    "NullMemory",
    "PluginConflictError",
    "PluginImportError",
    "SearchableMemory",
    "available_memories",
    "load_memory",
]

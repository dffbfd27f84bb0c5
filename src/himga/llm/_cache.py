"""A persistent, content-addressed cache of model replies, shared by threads and processes.

An entry is keyed by the SHA-256 of a canonical JSON document naming the provider,
the model, the settings that change a reply (temperature, reply budget) and the
full message list, so two calls share an entry exactly when a provider would be
asked the same thing. Entries live in one SQLite file in WAL mode: readers never
block the writer, every ``put`` is its own committed transaction, and a process
killed at any moment (``kill -9``) leaves a file that opens with every entry
committed before the kill.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from himga._json import dumps
from himga._redact import redact
from himga.llm._errors import LLMConfigError
from himga.llm._protocol import (
    ChatMessage,
    Completion,
    HasMaxTokens,
    HasTemperature,
    LLMClient,
)

__all__ = [
    "CacheSchemaError",
    "CacheStats",
    "CachingClient",
    "HasCacheStats",
    "LLMCache",
    "as_cache",
    "cache_key",
]

# Bumped when the key document or the table changes meaning; older files are refused.
_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 60_000


def cache_key(
    provider: str,
    model: str,
    settings: Mapping[str, Any],
    messages: Sequence[ChatMessage],
) -> str:
    """The hex SHA-256 naming one request: provider, model, ``settings`` and every message."""
    document = {
        "v": _SCHEMA_VERSION,
        "provider": provider,
        "model": model,
        "settings": dict(settings),
        "messages": [[m["role"], m["content"]] for m in messages],
    }
    canonical = dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Lookups answered from the file (``hits``) and sent to the model (``misses``) so far."""

    path: str
    hits: int
    misses: int


@runtime_checkable
class HasCacheStats(Protocol):
    """A client that may answer from a cache: its hits and misses (``None``: no cache)."""

    @property
    def cache_stats(self) -> CacheStats | None:
        """The cache file and this process's hits and misses, ``None`` without a cache."""
        ...


class CacheSchemaError(LLMConfigError):
    """The file is not a himga LLM cache of this version (or cannot be opened as one).

    Raised before anything is written to it: another program's SQLite file is
    left exactly as it was.
    """


# The cache's own tables: a file holding any other table belongs to someone else.
_TABLES = frozenset({"meta", "replies"})
# Their columns (name, declared type), as _claim creates them.
_COLUMNS = {
    "meta": (("name", "TEXT"), ("value", "TEXT")),
    "replies": (
        ("key", "TEXT"),
        ("text", "TEXT"),
        ("input_tokens", "INTEGER"),
        ("output_tokens", "INTEGER"),
        ("model", "TEXT"),
    ),
}


class LLMCache:
    """Replies stored in the SQLite file ``path`` (created with its parent directories).

    Safe to share between threads (one connection behind a lock) and between
    processes (SQLite's own locking; a writer waits up to a minute for another).
    ``get`` counts a hit or a miss; ``put`` of a key already present keeps the
    first reply, so concurrent writers of one request agree on what is stored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        try:
            # isolation_level=None: autocommit; each put is one committed transaction.
            self._db = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:  # a directory, an unreadable path
            raise CacheSchemaError(f"{self.path}: cannot open as an LLM cache: {exc}") from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            version = self._claim()
            if version == str(_SCHEMA_VERSION):
                self._verify()
                # Only now that the file is known to be a cache: WAL lets readers
                # never block the writer, and stays a property of the file.
                self._db.execute("PRAGMA journal_mode=WAL")
                # FULL: a committed entry survives an OS crash, not only a killed
                # process; one fsync per reply is nothing beside the call behind it.
                self._db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            self._db.close()
            raise CacheSchemaError(f"{self.path}: not a himga LLM cache: {exc}") from exc
        except CacheSchemaError:
            self._db.close()
            raise
        if version != str(_SCHEMA_VERSION):
            self._db.close()
            raise CacheSchemaError(
                f"{self.path}: LLM cache schema version {version}, this himga writes "
                f"{_SCHEMA_VERSION}; use another --llm-cache file"
            )

    def _claim(self) -> str | None:
        """The file's cache schema version, making an empty file a cache first.

        One write-locked transaction, so two processes opening a new file at once
        cannot see it half made; a file holding any table but the cache's own is
        refused before anything is written to it.
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                name
                for (name,) in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            }
            if tables and tables != _TABLES:
                foreign = ", ".join(sorted(tables - _TABLES) or sorted(_TABLES - tables))
                raise CacheSchemaError(
                    f"{self.path}: not a himga LLM cache (tables {foreign} are not the "
                    "cache's); it was left unchanged: use another --llm-cache file"
                )
            if not tables:
                self._db.execute(
                    "CREATE TABLE replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                    "input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, "
                    "model TEXT NOT NULL)"
                )
                self._db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
                self._db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (str(_SCHEMA_VERSION),)
                )
            row = self._db.execute(
                "SELECT value FROM meta WHERE name = 'schema_version'"
            ).fetchone()
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return None if row is None else str(row[0])

    def _verify(self) -> None:
        """:class:`CacheSchemaError` unless the tables have the cache's columns, the file
        passes SQLite's ``quick_check`` and every row has the types a reply is read
        with: a damaged or foreign file stops the run before it starts, naming the file,
        rather than failing each of its LLM calls."""
        for table, expected in _COLUMNS.items():
            found = tuple(
                (name, kind.upper())
                for _, name, kind, *_ in self._db.execute(f"PRAGMA table_info({table})")
            )
            if found != expected:
                raise self._damaged(f"table {table} has columns {found}, not {expected}")
        (problem,) = self._db.execute("PRAGMA quick_check(1)").fetchone()
        if problem != "ok":
            raise self._damaged(" ".join(str(problem).split()))  # one line
        (bad,) = self._db.execute(
            "SELECT COUNT(*) FROM replies WHERE typeof(key) != 'text' "
            "OR typeof(text) NOT IN ('text', 'blob') OR typeof(model) NOT IN ('text', 'blob') "
            "OR typeof(input_tokens) != 'integer' OR typeof(output_tokens) != 'integer'"
        ).fetchone()
        if bad:
            raise self._damaged(f"{bad} replies are not (text, tokens, model) as stored")

    def _damaged(self, problem: str) -> CacheSchemaError:
        return CacheSchemaError(
            f"{self.path}: damaged or not a himga LLM cache ({problem}); it was left "
            "unchanged: use another --llm-cache file"
        )

    def __repr__(self) -> str:
        return f"LLMCache({str(self.path)!r})"

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM replies").fetchone()
        return int(count)

    def get(self, key: str) -> Completion | None:
        """The stored reply for ``key`` (a hit), or ``None`` (a miss)."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, input_tokens, output_tokens, model FROM replies WHERE key = ?",
                (key,),
            ).fetchone()
            if row is None:
                self._misses += 1
                return None
            self._hits += 1
        text, input_tokens, output_tokens, model = row
        return Completion(_loaded(text), input_tokens, output_tokens, _loaded(model))

    def discard(self, key: str) -> None:
        """Remove the entry under ``key`` (if any) and commit."""
        with self._lock:
            self._db.execute("DELETE FROM replies WHERE key = ?", (key,))

    def put(self, key: str, completion: Completion) -> Completion:
        """Store ``completion`` under ``key`` and commit; an existing entry is kept.

        Its text is stored redacted (:func:`himga._redact.redact`: API keys of the
        environment, credentials in URLs and headers), so a key an LLM echoes never
        persists in the file; the completion as stored is returned, what a later hit
        gives.
        """
        completion = dataclasses.replace(completion, text=redact(completion.text))
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO replies VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    _stored(completion.text),
                    completion.input_tokens,
                    completion.output_tokens,
                    _stored(completion.model),
                ),
            )
        return completion

    @property
    def stats(self) -> CacheStats:
        """Hits and misses of this object's lookups (not of other processes')."""
        with self._lock:
            return CacheStats(str(self.path), self._hits, self._misses)

    def close(self) -> None:
        """Close the file; the object must not be used afterwards."""
        with self._lock:
            self._db.close()


def _stored(text: str) -> str | bytes:
    """``text`` as the file holds it: itself, or -- when it holds a lone surrogate, which
    SQLite's UTF-8 text cannot -- its ``surrogatepass`` bytes (a BLOB, never
    mistaken for text), so such a reply is kept and served like any other."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def _loaded(value: str | bytes) -> str:
    """The inverse of :func:`_stored`."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def as_cache(cache: str | os.PathLike[str] | LLMCache) -> LLMCache:
    """``cache`` itself, or the cache in the file it names."""
    return cache if isinstance(cache, LLMCache) else LLMCache(cache)


class CachingClient:
    """Any :class:`~himga.llm.LLMClient` with its replies cached in ``cache``.

    The key's settings are the effective reply budget (``max_tokens``, else the
    client's ``max_tokens`` attribute if it has one) and the client's
    ``temperature`` attribute if it has one. A hit costs no call and leaves the
    wrapped client's usage unchanged; it returns the tokens the original call
    used. Replies of ``chat`` carry no token counts, so they are stored with 0.
    ``SDKClient`` (``get_client(cache=...)``) caches natively and counts tokens.
    """

    def __init__(self, client: LLMClient, cache: str | os.PathLike[str] | LLMCache) -> None:
        self.client = client
        self.cache = as_cache(cache)

    def __repr__(self) -> str:
        return f"CachingClient({self.client!r}, {self.cache!r})"

    @property
    def provider(self) -> str:
        """The wrapped client's provider."""
        return self.client.provider

    @property
    def model(self) -> str:
        """The wrapped client's model."""
        return self.client.model

    @property
    def max_concurrency(self) -> int:
        """The wrapped client's bound on concurrent ``achat`` calls."""
        return self.client.max_concurrency

    @property
    def cache_stats(self) -> CacheStats:
        """Hits and misses so far."""
        return self.cache.stats

    def _key(self, messages: Sequence[ChatMessage], max_tokens: int | None) -> str:
        client = self.client
        if max_tokens is None and isinstance(client, HasMaxTokens):
            max_tokens = client.max_tokens
        temperature = client.temperature if isinstance(client, HasTemperature) else None
        settings = {"max_tokens": max_tokens, "temperature": temperature}
        return cache_key(self.provider, self.model, settings, messages)

    def chat(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> str:
        """The cached reply text, else the wrapped client's (then stored)."""
        key = self._key(messages, max_tokens)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.text
        text = self.client.chat(messages, max_tokens=max_tokens)
        return self.cache.put(key, Completion(text, 0, 0, self.model)).text

    def forget(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> None:
        """Drop the stored reply to this request: the next identical one is asked again."""
        self.cache.discard(self._key(messages, max_tokens))

    async def achat(
        self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None
    ) -> Completion:
        """The cached reply, else the wrapped client's (then stored)."""
        key = self._key(messages, max_tokens)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        completion = await self.client.achat(messages, max_tokens=max_tokens)
        return self.cache.put(key, completion)

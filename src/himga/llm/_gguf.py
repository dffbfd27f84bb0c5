"""A GGUF weights file: checked before a runtime loads it, and named by its SHA-256.

The SHA-256 of a model file of a gigabyte takes seconds to compute, and every run
(and every Ray worker) names the file by it, so it is computed once per file
version and kept in a small JSON file keyed by path, size and modification time:
``$HIMGA_WEIGHTS_HASH_CACHE``, else ``<user cache dir>/himga/weights_sha256.json``.
A damaged or unwritable cache file only costs the hash again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

import platformdirs

from himga.llm._errors import LLMConfigError

__all__ = ["GGUF_MAGIC", "HASH_CACHE_ENV", "LocalModelError", "check_gguf", "gguf_sha256"]

HASH_CACHE_ENV = "HIMGA_WEIGHTS_HASH_CACHE"
#: The first four bytes of every GGUF file (the format's magic number, ``GGUF`` in ASCII).
GGUF_MAGIC = b"GGUF"

_lock = threading.Lock()
# Hashes computed or read in this process, keyed as on disk.
_known: dict[str, str] = {}


class LocalModelError(LLMConfigError):
    """A local model cannot be served: its file is missing, not a GGUF file, or the
    runtime could not load it (the runtime's last words are in the message)."""


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute, once it is a readable file starting with the GGUF magic;
    :class:`LocalModelError` naming the file and the problem otherwise."""
    file = Path(path).expanduser().absolute()
    try:
        with file.open("rb") as handle:
            head = handle.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise LocalModelError(f"model file {file} does not exist (give a .gguf file)") from None
    except IsADirectoryError:
        raise LocalModelError(f"model file {file} is a directory (give a .gguf file)") from None
    except OSError as exc:
        raise LocalModelError(f"model file {file} cannot be read: {exc.strerror}") from None
    if head != GGUF_MAGIC:
        raise LocalModelError(
            f"model file {file} is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r}); "
            "the local provider serves GGUF weights only"
        )
    return file


def _cache_path() -> Path:
    override = os.environ.get(HASH_CACHE_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("himga")) / "weights_sha256.json"


def _read(cache: Path) -> dict[str, str]:
    try:
        data = json.loads(cache.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _write(cache: Path, key: str, digest: str) -> None:
    """Add ``key`` to the cache file, keeping what other processes wrote meanwhile."""
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        entries = {**_read(cache), key: digest}
        handle, temporary = tempfile.mkstemp(dir=cache.parent, prefix=cache.name, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entries, out, sort_keys=True)
            os.replace(temporary, cache)  # atomic: readers see the old file or the new one
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def gguf_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of the file at ``path``, computed once per (path, size, mtime)."""
    file = Path(path).absolute()
    stat = file.stat()
    key = f"{file}|{stat.st_size}|{stat.st_mtime_ns}"
    with _lock:
        if key in _known:
            return _known[key]
    cache = _cache_path()
    digest = _read(cache).get(key)
    if digest is None:
        hasher = hashlib.sha256()
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        digest = hasher.hexdigest()
        _write(cache, key, digest)
    with _lock:
        _known[key] = digest
    return digest

"""Download of an official dataset file: verified, atomic, with a progress bar."""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.request
import warnings
from pathlib import Path
from typing import IO

from tqdm import tqdm

from himga.data._errors import (
    ChecksumMismatchError,
    DatasetError,
    DownloadError,
    UnverifiedDownloadWarning,
)

__all__ = ["download_file"]

_BLOCK = 1 << 20


def download_file(
    url: str,
    dest: Path,
    *,
    sha256: str | None,
    show_progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest`` and return ``dest``.

    The body goes to a temporary file beside ``dest`` that replaces ``dest``
    (``os.replace``) only once complete and verified, so ``dest`` is either
    absent or whole. With ``sha256`` the content must match it
    (:class:`ChecksumMismatchError` otherwise); without, it must look like a
    JSON array (first and last non-blank bytes ``[`` and ``]``) and
    :class:`UnverifiedDownloadWarning` reports its sha256. Network and HTTP
    failures raise :class:`DownloadError`. On any failure nothing is left behind,
    not even the directories created for ``dest``.
    """
    created = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, temp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    except BaseException:
        _remove_empty(created)
        raise
    temp = Path(temp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            received, expected = _fetch(url, out, digest, dest.name, show_progress, timeout)
            out.flush()
            os.fsync(out.fileno())
        if expected is not None and received != expected:
            raise DownloadError(f"{url}: connection closed after {received} of {expected} bytes")
        actual = digest.hexdigest()
        if sha256 is not None and actual != sha256:
            raise ChecksumMismatchError(
                url, f"sha256 is {actual}, expected {sha256}; the download was discarded"
            )
        if sha256 is None:
            _check_json_array(url, temp)
            warnings.warn(
                UnverifiedDownloadWarning(
                    f"{url}: no pinned sha256 for this file, only its shape was checked; "
                    f"its sha256 is {actual}"
                ),
                stacklevel=3,
            )
        os.replace(temp, dest)
    except BaseException:
        temp.unlink(missing_ok=True)
        _remove_empty(created)
        raise
    return dest


def _remove_empty(directories: list[Path]) -> None:
    """Remove the directories this download created (deepest first), if still empty."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            return


def _fetch(
    url: str,
    out: IO[bytes],
    digest: hashlib._Hash,
    label: str,
    show_progress: bool,
    timeout: float,
) -> tuple[int, int | None]:
    """Stream the body of ``url`` into ``out``; ``(bytes received, Content-Length or None)``."""
    request = urllib.request.Request(url, headers={"User-Agent": "himga"})
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            expected = int(length) if length and length.isascii() and length.isdigit() else None
            with tqdm(
                total=expected, unit="B", unit_scale=True, desc=label, disable=not show_progress
            ) as bar:
                while block := response.read(_BLOCK):
                    out.write(block)
                    digest.update(block)
                    received += len(block)
                    bar.update(len(block))
    except (OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"{url}: download failed: {exc}") from exc
    return received, expected


def _check_json_array(url: str, path: Path) -> None:
    with path.open("rb") as handle:
        head = handle.read(64).lstrip()
        handle.seek(max(0, path.stat().st_size - 64))
        tail = handle.read().rstrip()
    if not (head.startswith(b"[") and tail.endswith(b"]")):
        raise DatasetError(url, "the download is not a JSON array; it was discarded")

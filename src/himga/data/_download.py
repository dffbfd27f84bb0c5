"""Download of an official dataset file: verified, atomic, with a progress bar."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import socket
import tempfile
import threading
import urllib.request
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from himga.data._errors import (
    ChecksumMismatchError,
    DatasetError,
    DownloadError,
    UnverifiedDownloadWarning,
)

__all__ = ["DEADLINE_ENV", "DEFAULT_DEADLINE", "download_deadline", "download_file"]

_BLOCK = 1 << 20
#: Seconds one file's whole transfer may take (``timeout`` bounds each wait for data:
#: a server dripping a byte every few seconds never trips it).
DEFAULT_DEADLINE = 900.0
#: Overrides :data:`DEFAULT_DEADLINE` (a slow link, or a test).
DEADLINE_ENV = "HIMGA_DOWNLOAD_DEADLINE"


def download_deadline() -> float:
    """Seconds a file's transfer may take: ``$HIMGA_DOWNLOAD_DEADLINE`` if it is a positive
    number, else :data:`DEFAULT_DEADLINE`."""
    raw = os.environ.get(DEADLINE_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_DEADLINE
    return value if 0 < value < float("inf") else DEFAULT_DEADLINE


def download_file(
    url: str,
    dest: Path,
    *,
    sha256: str | None,
    show_progress: bool = True,
    timeout: float = 60.0,
    deadline: float | None = None,
) -> Path:
    """Download ``url`` to ``dest`` and return ``dest``.

    ``timeout`` bounds each wait for the server, ``deadline`` (seconds, default
    :func:`download_deadline`) the whole transfer: past it the connection is shut
    and :class:`DownloadError` says so.

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
            received, expected = _fetch(
                url, out, digest, dest.name, show_progress, timeout, deadline
            )
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


class _Deadline:
    """Shuts down the sockets it watches once ``seconds`` have passed since it started,
    which ends any read blocked on them (a server can keep each read short of
    ``timeout`` for ever). Name resolution is not covered."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):  # closed already: nothing to stop
            sock.shutdown(socket.SHUT_RDWR)


def _watched(http_class: Callable[..., http.client.HTTPConnection], deadline: _Deadline) -> Any:
    """``http_class`` whose connections are watched by ``deadline`` once connected."""

    def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        connection = http_class(*args, **kwargs)
        connect = connection.connect

        def connect_watched() -> None:
            connect()
            if connection.sock is not None:
                deadline.watch(connection.sock)

        connection.connect = connect_watched  # type: ignore[method-assign]
        return connection

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class, self.deadline), req, **kwargs)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> http.client.HTTPResponse:
        return super().do_open(_watched(http_class, self.deadline), req, **kwargs)


def _fetch(
    url: str,
    out: IO[bytes],
    digest: hashlib._Hash,
    label: str,
    show_progress: bool,
    timeout: float,
    deadline: float | None = None,
) -> tuple[int, int | None]:
    """Stream the body of ``url`` into ``out``; ``(bytes received, Content-Length or None)``.

    :class:`DownloadError` when the transfer fails or has not finished after
    ``deadline`` seconds (default :func:`download_deadline`).
    """
    request = urllib.request.Request(url, headers={"User-Agent": "himga"})
    received = 0
    expected: int | None = None
    with _Deadline(download_deadline() if deadline is None else deadline) as watch:
        opener = urllib.request.build_opener(_HTTPHandler(watch), _HTTPSHandler(watch))
        try:
            with opener.open(request, timeout=timeout) as response:
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
            if not watch.expired:
                raise DownloadError(f"{url}: download failed: {exc}") from exc
        if watch.expired:
            raise DownloadError(
                f"{url}: download did not finish within {watch.seconds:g} s "
                f"({received:,} bytes received; ${DEADLINE_ENV} allows longer)"
            )
    return received, expected


def _check_json_array(url: str, path: Path) -> None:
    with path.open("rb") as handle:
        head = handle.read(64).lstrip()
        handle.seek(max(0, path.stat().st_size - 64))
        tail = handle.read().rstrip()
    if not (head.startswith(b"[") and tail.endswith(b"]")):
        raise DatasetError(url, "the download is not a JSON array; it was discarded")

"""A fixture that fails a test whose code opens a connection to anything but this machine.

The adapters' tests use it (``pytestmark = pytest.mark.usefixtures("loopback_only")``,
which ``tests/conftest.py`` makes available to every module): every
``socket.connect`` / ``connect_ex`` to a non-loopback address and every
``getaddrinfo`` of a name that is not ``localhost`` or a loopback literal is refused
with ``OSError`` *before* anything is sent, and recorded. The test then fails at
teardown even when the code under test swallowed the error (telemetry clients do),
naming every attempt. Unix sockets are allowed. Threads are covered (the patches are
on the ``socket`` module and class); child processes are not, unless they start
Python with ``tests/child_guard`` on ``PYTHONPATH`` (see its ``sitecustomize``).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["child_guard_env", "guard_network", "is_loopback", "loopback_only"]

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: object) -> bool:
    """Whether ``host`` (a name or address, ``str`` or ``bytes``) is this machine's loopback."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%")[0].lower()
    if name in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _allowed(family: int, address: Any) -> bool:
    if family == getattr(socket, "AF_UNIX", None):
        return True
    if isinstance(address, tuple) and address:
        return is_loopback(address[0])
    return False


def guard_network(monkeypatch: pytest.MonkeyPatch, attempts: list[str] | None = None) -> list[str]:
    """Patch ``socket`` to refuse non-loopback connections; the list of attempts (``attempts``
    if given), appended to."""
    attempts = [] if attempts is None else attempts
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def refuse(what: str) -> OSError:
        attempts.append(what)
        return OSError(f"network guard: {what} refused (tests may only reach loopback)")

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if not _allowed(sock.family, address):
            raise refuse(f"connect to {address!r}")
        connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        if not _allowed(sock.family, address):
            raise refuse(f"connect_ex to {address!r}")
        return connect_ex(sock, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_loopback(host):
            raise refuse(f"getaddrinfo of {host!r}")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return attempts


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuse and record every non-loopback connection attempt; fail the test if any."""
    attempts = guard_network(monkeypatch)
    yield attempts
    if attempts:
        pytest.fail("non-loopback network access attempted: " + "; ".join(attempts))


def child_guard_env(log: Path) -> dict[str, str]:
    """The environment variables that put the guard in every Python process started
    with them (``tests/child_guard/sitecustomize.py``), recording attempts in ``log``."""
    root = Path(__file__).resolve().parent.parent
    paths = [str(root / "tests" / "child_guard"), str(root), os.environ.get("PYTHONPATH", "")]
    return {
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "HIMGA_TEST_NETWORK_LOG": str(log),
    }

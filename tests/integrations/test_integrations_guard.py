"""The adapters' network guard refuses and records every connection that leaves the machine."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.network_guard import guard_network, is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        (b"127.0.0.1", True),
        ("10.0.0.1", False),
        ("192.0.2.1", False),
        ("example.org", False),
        ("::ffff:8.8.8.8", False),
        (None, False),
    ],
)
def test_is_loopback(host: object, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_outside_connections_are_refused_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real calls are replaced by recorders first, so a broken guard sends nothing either.
    reached: list[Any] = []
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: reached.append(address))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda sock, address: reached.append(address))
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *args, **kwargs: reached.append(host))
    attempts = guard_network(monkeypatch)
    with socket.socket() as sock:
        with pytest.raises(OSError, match="network guard"):
            sock.connect(("192.0.2.1", 443))
        with pytest.raises(OSError, match="network guard"):
            sock.connect_ex(("192.0.2.1", 443))
        sock.connect(("127.0.0.1", 9))
    with pytest.raises(OSError, match="network guard"):
        socket.getaddrinfo("us.i.posthog.com", 443)
    socket.getaddrinfo("localhost", 80)
    assert reached == [("127.0.0.1", 9), "localhost"]
    assert attempts == [
        "connect to ('192.0.2.1', 443)",
        "connect_ex to ('192.0.2.1', 443)",
        "getaddrinfo of 'us.i.posthog.com'",
    ]

"""The one loopback server base (``himga._loopback``): what the fake LLM, the recording
proxy, ``himga view`` and the tests' servers share."""

from __future__ import annotations

import socket
import urllib.request
from http.server import BaseHTTPRequestHandler

import pytest

from himga._loopback import LoopbackService


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_it_listens_when_made_serves_when_started_and_frees_its_port_when_stopped() -> None:
    service = LoopbackService(_Hello, name="hello")
    assert service.base_url == f"http://127.0.0.1:{service.port}"
    with socket.create_connection(("127.0.0.1", service.port), timeout=5):
        pass  # the backlog takes the connection before anything serves it
    service.start()
    with urllib.request.urlopen(service.base_url + "/", timeout=5) as reply:
        assert reply.read() == b"hello"
    service.stop()
    service.stop()  # idempotent
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", service.port), timeout=5).close()
    with pytest.raises(RuntimeError, match="hello is already serving or was stopped"):
        service.start()


def test_the_listen_backlog_takes_a_burst_of_clients() -> None:
    """The drift the base removed: one server had the default backlog of 5."""
    service = LoopbackService(_Hello, name="burst")
    try:
        assert service.server.request_queue_size >= 1024
        held = [socket.create_connection(("127.0.0.1", service.port), timeout=5) for _ in range(64)]
        for connection in held:
            connection.close()
    finally:
        service.stop()

"""One HTTP server on loopback, served from a daemon thread: what every server himga runs
(the fake LLM, the recording proxy, ``himga view``) and the tests' file server stand on,
so they bind, listen, serve and stop the same way."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackHTTPServer", "LoopbackService"]

HOST = "127.0.0.1"


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server whose request threads never keep the process alive."""

    daemon_threads = True
    # The default listen backlog (5) drops connection bursts from 64+ concurrent clients
    # (a Ray run's workers, an SDK's connection pool at high concurrency).
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that left (its own deadline, a killed worker) is no error of the server's.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class LoopbackService:
    """``handler`` bound on ``127.0.0.1:port`` (``0``: a free port) when made, so the
    address can be handed out before it serves; served from a daemon thread named
    ``name`` between :meth:`start` and :meth:`stop`.

    :meth:`stop` returns within about 50 ms of being called (the serving loop's poll
    interval) once in-flight requests' threads are left to finish on their own, and is
    idempotent; the port is free once it returns.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, port: int = 0, name: str) -> None:
        self.server = LoopbackHTTPServer((HOST, port), handler)
        self._name = name
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, no trailing slash."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Serve from a daemon thread; ``RuntimeError`` when serving or stopped already."""
        if self._thread is not None or self._closed:
            raise RuntimeError(f"{self._name} is already serving or was stopped")
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._name,
            daemon=True,
        )
        self._thread.start()

    def wait(self) -> None:
        """Block until serving ends (a Ctrl-C interrupts the wait)."""
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        """Stop serving and close the listening socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()

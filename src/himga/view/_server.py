"""``himga view``'s server: the page and its JSON documents on a loopback port, nothing else."""

from __future__ import annotations

import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from himga.view._data import ViewData
from himga.view._page import page, to_json

__all__ = ["ViewServer"]

_QUESTION = re.compile(r"/api/question/(\d+)/(\d+)\.json")
_INDEX = re.compile(r"/api/index/(\d+)\.json")


class ViewServer:
    """Serves ``data`` on ``127.0.0.1:port`` (``0``: a free port) from :meth:`start` (a
    background thread) or :meth:`serve_forever`, until :meth:`close`. Documents: ``/`` the
    page, ``/api/runs.json`` the leaderboard, ``/api/index/I.json`` run ``I``'s question
    index, ``/api/question/I/N.json`` question ``N`` of run ``I``. A context manager."""

    def __init__(self, data: ViewData, port: int = 0) -> None:
        self.data = data
        self._page = page(data, embed=False).encode("utf-8")
        self._indexes: dict[int, bytes] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        # The question indexes are built at once, beside the first requests (the page and
        # the leaderboard need none), so the question list rarely waits for its run's.
        threading.Thread(target=self._build_indexes, daemon=True).start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> ViewServer:
        """Serve on a daemon thread; returns ``self``."""
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until :meth:`close` (from another) or an exception."""
        self._server.serve_forever()

    def close(self) -> None:
        """Stop serving and free the port (idempotent)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ViewServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def document(self, path: str) -> tuple[bytes, str] | None:
        """The body and content type at ``path``; ``None`` when there is no such document."""
        runs = len(self.data.runs)
        if path in ("/", "/index.html"):
            return self._page, "text/html; charset=utf-8"
        if path == "/api/runs.json":
            return self._json(self.data.leaderboard()), "application/json"
        found = _INDEX.fullmatch(path)
        if found and int(found[1]) < runs:
            return self._index(int(found[1])), "application/json"
        found = _QUESTION.fullmatch(path)
        if found and int(found[1]) < runs:
            try:
                return self._json(self.data.question(int(found[1]), int(found[2]))), (
                    "application/json"
                )
            except IndexError:
                return None
        return None

    def _index(self, i: int) -> bytes:
        with self._lock:  # built once per run
            if i not in self._indexes:
                self._indexes[i] = self._json(self.data.index(i))
            return self._indexes[i]

    def _build_indexes(self) -> None:
        for i in range(len(self.data.runs)):
            self._index(i)

    @staticmethod
    def _json(document: Any) -> bytes:
        return to_json(document).encode("utf-8")


def _handler(server: ViewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = server.document(self.path.partition("?")[0])
            if found is None:
                self.send_error(HTTPStatus.NOT_FOUND, "no such document")
                return
            body, kind = found
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request log on the terminal would bury the address

    return Handler

"""``himga view``'s server: the page and its JSON documents on a loopback port, nothing else."""

from __future__ import annotations

import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs

from himga._loopback import LoopbackService
from himga.runs import RunReadError
from himga.view._data import OUTCOMES, ViewData
from himga.view._page import page, to_json

__all__ = ["ViewServer"]

_QUESTION = re.compile(r"/api/question/(\d+)/(\d+)\.json")
_INDEX = re.compile(r"/api/index/(\d+)\.json")
_ENTRY = re.compile(r"/api/entry/(\d+)\.json")
_QUESTIONS = re.compile(r"/api/questions/(\d+)\.json")
_JSON = "application/json"


class ViewServer:
    """Serves ``data`` on ``127.0.0.1:port`` (``0``: a free port) from :meth:`start` (a
    background thread; :meth:`wait` blocks on it) until :meth:`close`. Listens from the
    start, so its address can be handed out before the runs are read: without ``data``,
    requests for documents wait for :meth:`provide`. A context manager.

    Documents: ``/`` the page; ``/api/runs.json`` the leaderboard (each run's
    measurements only once its results are read); ``/api/entry/I.json`` run ``I``'s
    entry, measured (reads its results); ``/api/questions/I.json?category=C&outcome=O
    &disagree=1&page=P`` a page of run ``I``'s questions (:meth:`ViewData.questions`);
    ``/api/index/I.json`` its question index; ``/api/question/I/N.json`` its question
    ``N``. A run whose results cannot be read answers 500 with the reason.
    """

    def __init__(self, data: ViewData | None = None, port: int = 0) -> None:
        self._data = data
        self._ready = threading.Event()
        if data is not None:
            self._ready.set()
        self._page = page(None).encode("utf-8")
        self._service = LoopbackService(_handler(self), port=port, name="himga-view")

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``."""
        return self._service.base_url + "/"

    @property
    def data(self) -> ViewData:
        """The runs served (waits for :meth:`provide` when not given yet)."""
        self._ready.wait()
        assert self._data is not None  # set before the event
        return self._data

    def provide(self, data: ViewData) -> None:
        """Serve ``data`` from now on (once: the runs a server shows do not change)."""
        if self._data is not None:
            raise RuntimeError("this server already has its runs")
        self._data = data
        self._ready.set()

    def start(self) -> ViewServer:
        """Serve on a daemon thread; returns ``self``."""
        self._service.start()
        return self

    def wait(self) -> None:
        """Block until the thread of :meth:`start` ends (a Ctrl-C interrupts the wait)."""
        self._service.wait()

    def close(self) -> None:
        """Stop serving and free the port (idempotent)."""
        self._service.stop()

    def __enter__(self) -> ViewServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def document(self, path: str, query: str = "") -> tuple[bytes, str] | None:
        """The body and content type at ``path`` (with ``query``, the part after ``?``);
        ``None`` when there is no such document; :class:`~himga.runs.RunReadError` when
        the run's results cannot be read."""
        if path in ("/", "/index.html"):
            return self._page, "text/html; charset=utf-8"
        if not path.startswith("/api/"):
            return None
        data = self.data
        if path == "/api/runs.json":
            return _json(data.leaderboard()), _JSON
        found = _ENTRY.fullmatch(path) or _INDEX.fullmatch(path) or _QUESTIONS.fullmatch(path)
        if found and int(found[1]) < len(data):
            i = int(found[1])
            if found.re is _ENTRY:
                return _json(data.entry(i)), _JSON
            if found.re is _INDEX:
                return _json(data.index(i)), _JSON
            return self._questions(data, i, parse_qs(query))
        found = _QUESTION.fullmatch(path)
        if found and int(found[1]) < len(data):
            try:
                return _json(data.question(int(found[1]), int(found[2]))), _JSON
            except IndexError:
                return None
        return None

    @staticmethod
    def _questions(data: ViewData, i: int, query: dict[str, list[str]]) -> tuple[bytes, str] | None:
        def one(name: str) -> str:
            return query.get(name, [""])[-1]

        page = one("page") or "0"
        outcome = one("outcome")
        if not page.isdigit() or outcome not in ("", *OUTCOMES):
            return None
        chosen = data.questions(
            i,
            category=one("category"),
            outcome=outcome,
            disagree=one("disagree") == "1",
            page=int(page),
        )
        return _json(chosen), _JSON


def _json(document: Any) -> bytes:
    return to_json(document).encode("utf-8")


def _handler(server: ViewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            try:
                found = server.document(path, query)
            except RunReadError as exc:
                self._send(
                    HTTPStatus.INTERNAL_SERVER_ERROR, str(exc).encode(), "text/plain; charset=utf-8"
                )
                return
            if found is None:
                self.send_error(HTTPStatus.NOT_FOUND, "no such document")
                return
            self._send(HTTPStatus.OK, *found)

        def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request log on the terminal would bury the address

    return Handler

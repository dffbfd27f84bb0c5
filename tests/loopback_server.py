"""A file server on 127.0.0.1 for the download tests (see the ``server`` fixture)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

from himga._loopback import LoopbackService


class LoopbackServer:
    """Serves ``routes`` (path -> body); ``short`` paths announce more bytes than they send."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.short: set[str] = set()
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                body = server.routes.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                extra = 1000 if self.path in server.short else 0
                self.send_header("Content-Length", str(len(body) + extra))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.service = LoopbackService(Handler, name="test-file-server")
        self.base = self.service.base_url

    def url(self, path: str, body: bytes) -> str:
        self.routes[path] = body
        return self.base + path

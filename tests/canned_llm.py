"""A loopback OpenAI- and Anthropic-compatible server answering every request with a canned
reply, checking nothing: what gateways and local servers do that the strict
:class:`~himga.llm.FakeLLMServer` refuses to imitate (``null`` token counts, prose for
a ``json_object`` request)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from typing_extensions import Self

from himga._loopback import LoopbackService


def openai_reply(text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Chat Completions body answering ``text`` with ``usage``."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": usage or {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def anthropic_reply(text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Messages body answering ``text`` with ``usage``."""
    return {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": usage or {"input_tokens": 1, "output_tokens": 1},
    }


class CannedLLMServer:
    """Serves ``openai`` at ``/v1/chat/completions`` and ``anthropic`` at ``/v1/messages``
    on 127.0.0.1 while entered; ``openai_base_url`` and ``anthropic_base_url`` say where."""

    def __init__(
        self, openai: dict[str, Any] | None = None, anthropic: dict[str, Any] | None = None
    ) -> None:
        replies = {"/v1/chat/completions": openai, "/v1/messages": anthropic}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps(replies.get(self.path)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.service = LoopbackService(Handler, name="canned-llm")
        url = self.service.base_url
        self.anthropic_base_url = url
        self.openai_base_url = url + "/v1"

    def __enter__(self) -> Self:
        self.service.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.service.stop()

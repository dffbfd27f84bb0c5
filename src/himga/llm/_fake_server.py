"""A loopback fake LLM server speaking the Anthropic Messages and OpenAI Chat Completions APIs.

:class:`FakeLLMServer` lets tests and benchmarks drive the *official* SDKs end to
end without touching the network: it listens on ``127.0.0.1`` (a free port),
answers ``POST /v1/messages`` (Anthropic) and ``POST /v1/chat/completions``
(OpenAI) with well-formed bodies including token usage, and can inject HTTP
faults (429 with ``retry-after-ms``, 500, 529, ...) on a fixed queue, per
distinct prompt, or at a seeded random rate. It records every request and the
time during which at least one request was in flight (``busy_seconds``) and
the summed in-flight time of all requests (``in_flight_seconds``).

It uses the standard library only: no SDK and no Hypothesis is imported.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from typing_extensions import Self

from himga.llm._protocol import ChatMessage

__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "echo_responder",
    "offline_responder",
    "word_count",
]

Responder = Callable[[list[ChatMessage]], str]

_STOP_WAIT = 10.0
_ANTHROPIC_PATH = "/v1/messages"
_OPENAI_PATH = "/v1/chat/completions"

# Anthropic error ``type`` per status, as documented for the Messages API.
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
# From API version 2026-10-21 (sent by anthropic SDK >= 2) any sampling parameter is a 400.
_NO_SAMPLING_VERSION = "2026-10-21"
_SAMPLING_PARAMETERS = ("temperature", "top_p", "top_k")
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}


def word_count(text: str) -> int:
    """The fake server's token count for ``text``: its number of whitespace-separated words."""
    return len(text.split())


def echo_responder(messages: list[ChatMessage]) -> str:
    """The default reply: ``"echo: "`` and the first 12 words of the last user message."""
    last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return "echo: " + " ".join(last_user.split()[:12])


_WORD = re.compile(r"[a-z0-9]+")
_ABSTAINED = ("not mentioned", "no information")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _field(prompt: str, label: str, end: str) -> str:
    # The last occurrence: mem0's judge prompt shows an example "Gold answer:" first.
    _, found, rest = prompt.rpartition(label)
    return rest.partition(end)[0].strip() if found else ""


def offline_responder(messages: list[ChatMessage]) -> str:
    """A reply that lets the whole LLM path run offline without a single echoed verdict.

    * Judge prompts (mem0's LoCoMo judge, LongMemEval's yes / no prompts): a
      verdict this function decides, never text copied from the prompt --
      correct when every word of the gold answer occurs in the generated one
      (an abstention prompt: when the response says "not mentioned" or "no
      information"); ``{"label": "CORRECT"}`` / ``{"label": "WRONG"}`` or
      ``yes`` / ``no``.
    * Answer prompts (:meth:`~himga.agent.BaseAgent.build_prompt`): the first
      line of the retrieved context, without its date and speaker, or "Not
      mentioned in the conversation." when the prompt has no context.
    * Anything else: :func:`echo_responder`.
    """
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if "Generated answer:" in prompt and "Gold answer:" in prompt:
        gold = _field(prompt, "Gold answer:", "\nGenerated answer:")
        generated = _field(prompt, "Generated answer:", "\n")
        correct = bool(_words(gold)) and _words(gold) <= _words(generated)
        return json.dumps({"label": "CORRECT" if correct else "WRONG"})
    if "Model Response:" in prompt:
        response = _field(prompt, "Model Response:", "\n\n").lower()
        if "Explanation:" in prompt:
            correct = any(marker in response for marker in _ABSTAINED)
        else:
            label = "Rubric:" if "Rubric:" in prompt else "Correct Answer:"
            expected = _words(_field(prompt, label, "\n\nModel Response:"))
            correct = bool(expected) and expected <= _words(response)
        return "yes" if correct else "no"
    if prompt.endswith("Short answer:"):
        if not prompt.startswith("Below is what you remember"):
            return "Not mentioned in the conversation."
        context = prompt.split("\n\n", 2)[1]
        first = context.strip().splitlines()[0] if context.strip() else ""
        # Reference memories write "[date] speaker: text" per line.
        text = first.split("] ", 1)[-1].split(": ", 1)[-1].strip()
        return text or "Not mentioned in the conversation."
    return echo_responder(messages)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received.

    ``api`` is ``"anthropic"``, ``"openai"`` or ``"unknown"``; ``messages`` is the
    conversation as the responder saw it (OpenAI style, an Anthropic ``system``
    parameter first as a ``"system"`` message; empty if the body was invalid);
    ``status`` is the HTTP status sent back.
    """

    api: str
    path: str
    body: Any
    messages: list[ChatMessage]
    status: int


class _BadRequest(Exception):
    """The request body does not follow the wire format; the message says what is wrong."""


class FakeLLMServer:
    """A threaded HTTP server on ``127.0.0.1`` that imitates the Anthropic and OpenAI chat APIs.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`)::

        with FakeLLMServer(latency=0.2) as server:
            os.environ["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
            os.environ["OPENAI_BASE_URL"] = server.openai_base_url

    Replies come from ``responder(messages)``, which receives OpenAI-style
    messages (an Anthropic ``system`` parameter becomes a leading ``"system"``
    message). Token usage is counted in words (:func:`word_count`); a reply longer
    than the request's ``max_tokens`` is cut to that many words and reported as
    ``stop_reason="max_tokens"`` / ``finish_reason="length"``.

    Faults, checked in this order for every request to a chat endpoint:

    1. ``faults``: a queue of HTTP statuses; each request pops one and fails with it
       (``inject`` appends more).
    2. ``fail_first``: the first ``fail_first`` attempts of every distinct
       conversation fail, attempt ``i`` with ``fault_statuses[i % len(fault_statuses)]``.
    3. ``fault_rate``: each remaining request fails with this probability, with a
       status drawn from ``fault_statuses``, using a ``random.Random(seed)``.

    A fault response carries the provider's error body and, when
    ``retry_after_ms`` is not ``None``, ``retry-after-ms`` and ``retry-after``
    headers, which the official SDKs honour before retrying.

    ``api_key``, when set, must be sent (``x-api-key`` or ``Authorization: Bearer``)
    or the request fails with 401. Requests must be valid for their API: an
    Anthropic request needs an ``anthropic-version`` header, ``model``, an integer
    ``max_tokens`` and ``messages`` with only ``user``/``assistant`` roles (system
    prompts go in ``system``), and from version ``2026-10-21`` no ``temperature``,
    ``top_p`` or ``top_k``, as the real API; violations get a 400 with an
    ``invalid_request_error`` body.

    ``latency`` seconds are slept in every request before it is answered.
    ``port`` 0 (the default) binds a free port; ``base_url`` says which.
    Handles many concurrent connections (one daemon thread each).
    """

    def __init__(
        self,
        *,
        responder: Responder = echo_responder,
        latency: float = 0.0,
        faults: Sequence[int] = (),
        fail_first: int = 0,
        fault_rate: float = 0.0,
        fault_statuses: Sequence[int] = (429, 500, 529),
        seed: int = 0,
        retry_after_ms: float | None = 1.0,
        api_key: str | None = None,
        port: int = 0,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
        if fail_first < 0:
            raise ValueError(f"fail_first must be >= 0, got {fail_first!r}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate!r}")
        _check_statuses([*faults, *fault_statuses])
        if not fault_statuses and (fail_first or fault_rate):
            raise ValueError(
                "fault_statuses must not be empty when fail_first or fault_rate is set"
            )
        self.responder = responder
        self.latency = latency
        self.fail_first = fail_first
        self.fault_rate = fault_rate
        self.fault_statuses = tuple(fault_statuses)
        self.retry_after_ms = retry_after_ms
        self._api_key = api_key
        self._port = port
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._faults = deque(faults)
        self._attempts: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._busy_since = 0.0
        self._busy_total = 0.0
        self._last_change = 0.0
        self._in_flight_area = 0.0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._httpd is not None else "not started"
        return f"<FakeLLMServer {where}>"

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Self:
        """Bind ``port`` (default 0: a free one) on 127.0.0.1 and serve from a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("FakeLLMServer is already running")
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (idempotent).

        Requests still in flight skip the rest of their ``latency`` and are
        answered and recorded before ``stop`` returns (it waits at most
        10 seconds, in case a responder never returns).
        """
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=_STOP_WAIT)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (raises if the server is not running)."""
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        """The value for ``ANTHROPIC_BASE_URL`` / ``Anthropic(base_url=...)``."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """The value for ``OPENAI_BASE_URL`` / ``OpenAI(base_url=...)`` (ends in ``/v1``)."""
        return self.base_url + "/v1"

    # -- fault control and observations ---------------------------------------------

    def inject(self, *statuses: int) -> None:
        """Make the next ``len(statuses)`` chat requests fail with these statuses, in order."""
        _check_statuses(statuses)
        with self._lock:
            self._faults.extend(statuses)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request answered so far, in the order they were answered (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """How many requests were received (faulted ones included)."""
        with self._lock:
            return len(self._requests)

    @property
    def max_in_flight(self) -> int:
        """The largest number of requests that were being handled at the same moment."""
        with self._lock:
            return self._max_in_flight

    @property
    def busy_seconds(self) -> float:
        """Total time during which at least one request was in flight."""
        with self._lock:
            running = time.perf_counter() - self._busy_since if self._in_flight else 0.0
            return self._busy_total + running

    @property
    def in_flight_seconds(self) -> float:
        """The sum over requests of the time each was in flight (the in-flight count's integral).

        Divided by a wall time, it is the average number of requests in flight: the
        effective concurrency a client achieved.
        """
        with self._lock:
            return self._in_flight_area + self._in_flight * (
                time.perf_counter() - self._last_change
            )

    def reset_stats(self) -> None:
        """Forget recorded requests, per-conversation attempts and the timing statistics.

        ``max_in_flight``, ``busy_seconds`` and ``in_flight_seconds`` restart from
        the requests in flight now; queued faults stay queued.
        """
        with self._lock:
            now = time.perf_counter()
            self._requests.clear()
            self._attempts.clear()
            self._max_in_flight = self._in_flight
            self._busy_total = 0.0
            self._busy_since = now
            self._in_flight_area = 0.0
            self._last_change = now

    # -- request handling (called from handler threads) ---------------------------------

    def _enter(self) -> None:
        with self._lock:
            now = time.perf_counter()
            if self._in_flight == 0:
                self._busy_since = now
            self._in_flight_area += self._in_flight * (now - self._last_change)
            self._last_change = now
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            now = time.perf_counter()
            self._in_flight_area += self._in_flight * (now - self._last_change)
            self._last_change = now
            self._in_flight -= 1
            if self._in_flight == 0:
                self._busy_total += now - self._busy_since
                self._idle.notify_all()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _authorized(self, headers: Any) -> bool:
        if self._api_key is None:
            return True
        bearer = headers.get("authorization", "")
        return bool(
            headers.get("x-api-key") == self._api_key or bearer == f"Bearer {self._api_key}"
        )

    def _fault_for(self, messages: list[ChatMessage]) -> int | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            if self.fail_first:
                key = json.dumps(messages, sort_keys=True)
                attempt = self._attempts.get(key, 0)
                self._attempts[key] = attempt + 1
                if attempt < self.fail_first:
                    return self.fault_statuses[attempt % len(self.fault_statuses)]
            if self.fault_rate and self._rng.random() < self.fault_rate:
                return self._rng.choice(self.fault_statuses)
        return None

    def _fault_headers(self) -> dict[str, str]:
        if self.retry_after_ms is None:
            return {}
        return {
            "retry-after-ms": f"{self.retry_after_ms:g}",
            "retry-after": f"{self.retry_after_ms / 1000:g}",
        }

    def _handle(self, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, str], Any]:
        """Status, extra headers and JSON body for one POST; records the request."""
        api = {_ANTHROPIC_PATH: "anthropic", _OPENAI_PATH: "openai"}.get(path, "unknown")
        body: Any = None
        messages: list[ChatMessage] = []
        status, reply = 500, _error_body(api, 500, "fake server failed")
        extra: dict[str, str] = {}
        try:
            if api == "unknown":
                status, reply = 404, _error_body(api, 404, f"no route for POST {path}")
                return status, extra, reply
            if self.latency:
                self._stopping.wait(self.latency)
            if not self._authorized(headers):
                status, reply = 401, _error_body(api, 401, "invalid api key")
                return status, extra, reply
            try:
                body = json.loads(raw)
                messages = _parse_request(api, body, headers)
            except (ValueError, _BadRequest) as exc:
                status, reply = 400, _error_body(api, 400, str(exc))
                return status, extra, reply
            fault = self._fault_for(messages)
            if fault is not None:
                status, extra = fault, self._fault_headers()
                reply = _error_body(api, fault, f"injected fault {fault}")
                return status, extra, reply
            try:
                text = self.responder(messages)
            except Exception as exc:  # a responder bug must reach the client, not kill the thread
                reply = _error_body(api, 500, f"responder raised {exc!r}")
                return status, extra, reply
            status, reply = 200, _success_body(api, body, messages, text)
            return status, extra, reply
        finally:
            self._record(RecordedRequest(api, path, body, messages, status))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog (5) drops connection bursts from 64+ concurrent clients.
    request_queue_size = 1024
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    # The reply goes out in two writes (headers, then body): with Nagle on, the body
    # waits for the client's delayed ACK of the headers, ~40 ms per keep-alive call.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_POST(self) -> None:
        fake = self.server.fake
        fake._enter()
        try:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            status, extra, reply = fake._handle(self.path, self.headers, raw)
            self._send(status, extra, reply)
        finally:
            fake._leave()

    def _send(self, status: int, extra: dict[str, str], reply: Any) -> None:
        payload = json.dumps(reply).encode()
        try:
            self.send_response(status, _reason(status))
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_" + uuid.uuid4().hex)
            self.send_header("x-request-id", "req_" + uuid.uuid4().hex)
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (e.g. its timeout fired); nothing left to answer.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""


def _check_statuses(statuses: Sequence[int]) -> None:
    bad = [status for status in statuses if not 400 <= status <= 599]
    if bad:
        raise ValueError(f"fault statuses must be HTTP errors (400-599), got {bad}")


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _text_of(content: Any, where: str) -> str:
    """The text of a message ``content``: a string or a list of text blocks/parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if not (isinstance(block, dict) and block.get("type") == "text"):
                raise _BadRequest(f"{where}: only text content blocks are supported")
            texts.append(str(block.get("text", "")))
        return "".join(texts)
    raise _BadRequest(f"{where}: content must be a string or a list of content blocks")


def _parse_request(api: str, body: Any, headers: Any) -> list[ChatMessage]:
    """The conversation in ``body``, OpenAI style; raises :class:`_BadRequest` if malformed."""
    if not isinstance(body, dict):
        raise _BadRequest("body: expected a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _BadRequest("model: field required")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise _BadRequest("messages: expected a non-empty list")
    allowed = (
        {"user", "assistant"}
        if api == "anthropic"
        else {"system", "developer", "user", "assistant"}
    )
    messages: list[ChatMessage] = []
    if api == "anthropic":
        version = headers.get("anthropic-version")
        if not version:
            raise _BadRequest("anthropic-version: header is required")
        sampling = [name for name in _SAMPLING_PARAMETERS if name in body]
        if sampling and version >= _NO_SAMPLING_VERSION:
            raise _BadRequest(f"{sampling[0]}: Extra inputs are not permitted")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            raise _BadRequest("max_tokens: field required (a positive integer)")
        if "system" in body:
            messages.append({"role": "system", "content": _text_of(body["system"], "system")})
    for i, message in enumerate(raw_messages):
        where = f"messages.{i}"
        if not isinstance(message, dict) or message.get("role") not in allowed:
            role = message.get("role") if isinstance(message, dict) else None
            raise _BadRequest(
                f"{where}.role: unexpected role {role!r}; expected one of {sorted(allowed)}"
            )
        messages.append(
            {"role": message["role"], "content": _text_of(message.get("content"), where)}
        )
    return messages


def _max_tokens(api: str, body: dict[str, Any]) -> int | None:
    if api == "anthropic":
        return int(body["max_tokens"])
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return int(value) if isinstance(value, int) else None


def _success_body(api: str, body: dict[str, Any], messages: list[ChatMessage], text: str) -> Any:
    limit = _max_tokens(api, body)
    words = text.split()
    truncated = limit is not None and len(words) > limit
    if truncated:
        text = " ".join(words[:limit])
    input_tokens = sum(word_count(m["content"]) for m in messages)
    output_tokens = word_count(text)
    if api == "anthropic":
        return {
            "id": "msg_" + uuid.uuid4().hex,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if truncated else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "length" if truncated else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }


def _error_body(api: str, status: int, message: str) -> Any:
    if api == "openai":
        kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}

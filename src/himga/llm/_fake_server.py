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
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from typing_extensions import Self

from himga._loopback import LoopbackService
from himga.llm._fake_wire import (
    BadReply,
    BadRequest,
    ChatRequest,
    Reply,
    check_reply,
    error_body,
    parse_request,
    success_body,
    word_count,
)
from himga.llm._protocol import ChatMessage

__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "Responder",
    "echo_responder",
    "offline_responder",
    "word_count",
]

#: Answers one request. A function of ``list[ChatMessage]`` returning ``str`` fits
#: too: a :class:`ChatRequest` is that list, and a ``str`` is a text reply.
Responder = Callable[[ChatRequest], str | Reply]

_STOP_WAIT = 10.0
_MAX_PORT = 65535
# A day: longer is a slip (1e308 overflowed the server thread's wait and killed it).
_MAX_DELAY_S = 86_400.0
_ANTHROPIC_PATH = "/v1/messages"
_OPENAI_PATH = "/v1/chat/completions"


def echo_responder(messages: list[ChatMessage]) -> str:
    """The default reply: ``"echo: "`` and the first 12 words of the last user message."""
    last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return "echo: " + " ".join(last_user.split()[:12])


def offline_responder(messages: list[ChatMessage]) -> str:
    """A reply to an answer prompt that lets the LLM path run offline.

    * Answer prompts (:meth:`~himga.agent.BaseAgent.build_prompt`): the first
      line of the retrieved context, without its date and speaker, or "Not
      mentioned in the conversation." when the prompt has no context.
    * Anything else: :func:`echo_responder`.

    Judge prompts need their benchmark's judge to answer them without echoing
    the verdict words of the prompt: :func:`himga.eval.judge.offline_judge_responder`
    (what ``himga fake-llm`` serves) answers those and passes the rest here.
    """
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
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
    :class:`ChatRequest` the responder saw (or would have seen: OpenAI-style
    messages, an Anthropic ``system`` parameter first as a ``"system"`` message,
    with ``tools``, ``tool_choice`` and ``response_format``; empty if the body was
    invalid); ``status`` is the HTTP status sent back.
    """

    api: str
    path: str
    body: Any
    messages: list[ChatMessage]
    status: int


class FakeLLMServer:
    """A threaded HTTP server on ``127.0.0.1`` that imitates the Anthropic and OpenAI chat APIs.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`)::

        with FakeLLMServer(latency=0.2) as server:
            os.environ["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
            os.environ["OPENAI_BASE_URL"] = server.openai_base_url

    Each request that gets through (no fault) is answered by the next of the
    scripted ``replies`` (:meth:`script` queues more) or, when none is left, by
    ``responder(request)``. The :class:`ChatRequest` is the conversation as
    OpenAI-style messages (an Anthropic ``system`` parameter becomes a leading
    ``"system"`` message) and says which tools, tool choice and response format
    the request asked for. A reply is a ``str`` or a :class:`Reply` with tool calls;
    one a real model could not have given (text where a tool call is forced, a
    call of a tool not offered, text that is not JSON under ``response_format``
    ``json_object`` / ``json_schema``, or JSON without the schema's required keys)
    is answered with a 500 saying why, as is a responder that raises. Token usage
    is counted in words (:func:`word_count`); a text longer than the request's
    ``max_tokens`` is cut to that many words and reported as
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
    ``top_p`` or ``top_k``, as the real API; an OpenAI ``json_object`` request must
    say "json" in its messages, and a ``tool_choice`` must name an offered tool;
    violations get a 400 with an ``invalid_request_error`` body.

    ``latency`` seconds (at most a day) are slept in every request before it is answered.
    ``port`` 0 (the default) binds a free port; ``base_url`` says which.
    Handles many concurrent connections (one daemon thread each).
    """

    def __init__(
        self,
        *,
        responder: Responder = echo_responder,
        replies: Iterable[str | Reply] = (),
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
        if not 0 <= latency <= _MAX_DELAY_S:  # NaN fails both comparisons
            raise ValueError(f"latency must be in [0, {_MAX_DELAY_S:g}] seconds, got {latency!r}")
        if retry_after_ms is not None and not 0 <= retry_after_ms <= _MAX_DELAY_S * 1000:
            raise ValueError(
                f"retry_after_ms must be None or in [0, {_MAX_DELAY_S * 1000:g}], "
                f"got {retry_after_ms!r}"
            )
        if not 0 <= port <= _MAX_PORT:
            raise ValueError(f"port must be in 0-{_MAX_PORT} (0: any free port), got {port!r}")
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
        self._replies: deque[str | Reply] = deque(replies)
        self._attempts: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._busy_since = 0.0
        self._busy_total = 0.0
        self._last_change = 0.0
        self._in_flight_area = 0.0
        self._service: LoopbackService | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._service is not None else "not started"
        return f"<FakeLLMServer {where}>"

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Self:
        """Bind ``port`` (default 0: a free one) on 127.0.0.1 and serve from a daemon thread."""
        if self._service is not None:
            raise RuntimeError("FakeLLMServer is already running")
        self._stopping.clear()
        self._service = LoopbackService(_handler(self), port=self._port, name="himga-fake-llm")
        self._service.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (idempotent).

        Requests still in flight skip the rest of their ``latency`` and are
        answered and recorded before ``stop`` returns (it waits at most
        10 seconds, in case a responder never returns).
        """
        service, self._service = self._service, None
        if service is None:
            return
        self._stopping.set()
        service.stop()
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
        if self._service is None:
            raise RuntimeError("FakeLLMServer is not running; use it as a context manager")
        return self._service.base_url

    @property
    def anthropic_base_url(self) -> str:
        """The value for ``ANTHROPIC_BASE_URL`` / ``Anthropic(base_url=...)``."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """The value for ``OPENAI_BASE_URL`` / ``OpenAI(base_url=...)`` (ends in ``/v1``)."""
        return self.base_url + "/v1"

    # -- fault control and observations ---------------------------------------------

    def script(self, *replies: str | Reply) -> None:
        """Answer the next ``len(replies)`` requests that get through with these, in order.

        They come before the responder, after the faults: a faulted request
        consumes none, so its retry gets the reply it was meant to.
        """
        with self._lock:
            self._replies.extend(replies)

    @property
    def scripted(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._replies)

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

    def _answer(self, request: ChatRequest) -> Reply:
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
        reply = self.responder(request) if scripted is None else scripted
        return Reply(reply) if isinstance(reply, str) else reply

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
        status, reply = 500, error_body(api, 500, "fake server failed")
        extra: dict[str, str] = {}
        try:
            if api == "unknown":
                status, reply = 404, error_body(api, 404, f"no route for POST {path}")
                return status, extra, reply
            if self.latency:
                self._stopping.wait(self.latency)
            if not self._authorized(headers):
                status, reply = 401, error_body(api, 401, "invalid api key")
                return status, extra, reply
            try:
                body = json.loads(raw)
                request = parse_request(api, body, headers)
            except (ValueError, BadRequest) as exc:
                status, reply = 400, error_body(api, 400, str(exc))
                return status, extra, reply
            messages = request
            fault = self._fault_for(messages)
            if fault is not None:
                status, extra = fault, self._fault_headers()
                reply = error_body(api, fault, f"injected fault {fault}")
                return status, extra, reply
            try:
                answer = self._answer(request)
                check_reply(request, answer)
            except BadReply as exc:
                reply = error_body(api, 500, f"unusable reply: {exc}")
                return status, extra, reply
            except Exception as exc:  # a responder bug must reach the client, not kill the thread
                reply = error_body(api, 500, f"responder raised {exc!r}")
                return status, extra, reply
            status, reply = 200, success_body(request, answer)
            return status, extra, reply
        finally:
            self._record(RecordedRequest(api, path, body, messages, status))


def _handler(served: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    """The request handler of ``served``."""

    class Handler(_Handler):
        fake = served

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    # The reply goes out in two writes (headers, then body): with Nagle on, the body
    # waits for the client's delayed ACK of the headers, ~40 ms per keep-alive call.
    disable_nagle_algorithm = True
    fake: FakeLLMServer

    def do_POST(self) -> None:
        fake = self.fake
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

"""A loopback proxy that counts what a memory system spends on its LLM and embedding endpoint."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, TypeGuard
from urllib.parse import urlsplit

from typing_extensions import Self

from himga._errors import HimgaError
from himga._loopback import LoopbackService

__all__ = [
    "PHASES",
    "CostSummary",
    "MeteringConfigError",
    "PhaseCost",
    "ProxyCall",
    "RecordingProxy",
]


class MeteringConfigError(HimgaError, ValueError):
    """A recording proxy given an upstream it cannot relay to; the message names it."""


#: The phases of an evaluation, in report order; any other name is accepted too.
PHASES = ("preflight", "ingest", "retrieval", "answering", "judging")
# Hop-by-hop headers (RFC 9110 section 7.6.1) and those the proxy sets itself.
_NOT_FORWARDED = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "host"}
)


@dataclass(frozen=True, slots=True)
class ProxyCall:
    """One request that went through the proxy.

    ``api`` is read from the path: ``"chat"`` (OpenAI ``/chat/completions``),
    ``"embeddings"``, ``"messages"`` (Anthropic), ``"responses"`` (OpenAI) or
    ``"other"``. Tokens are what the upstream's ``usage`` reported (cached input
    included), ``None`` when it reported none; ``status`` is 502 when the upstream
    could not be reached, 504 when it had not replied by the time the proxy settled
    (:meth:`RecordingProxy.settle`); ``seconds`` is the upstream round trip as the proxy
    saw it; ``model`` is the ``"model"`` the request's JSON body named (``None``: it named
    none, or the call was recorded by a himga that did not read it).
    """

    phase: str
    api: str
    path: str
    status: int
    input_tokens: int | None
    output_tokens: int | None
    seconds: float
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field, the path without its query string (which
        may hold a key)."""
        return {
            "phase": self.phase,
            "api": self.api,
            "path": self.path.split("?", 1)[0],
            "status": self.status,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": round(self.seconds, 6),
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The inverse of :meth:`to_json`; ``ValueError`` naming a missing or mistyped field
        (``model`` may be missing: calls recorded before it was)."""
        kinds: dict[str, type | tuple[type, ...]] = {
            "phase": str,
            "api": str,
            "path": str,
            "status": int,
            "input_tokens": (int, type(None)),
            "output_tokens": (int, type(None)),
            "seconds": (int, float),
        }
        for name, kind in kinds.items():
            value = data.get(name)
            if name not in data or not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"call field {name!r}: missing or mistyped ({value!r})")
        model = data.get("model")
        if not isinstance(model, (str, type(None))):
            raise ValueError(f"call field 'model': mistyped ({model!r})")
        return cls(**{name: data[name] for name in kinds}, model=model)


@dataclass(frozen=True, slots=True)
class PhaseCost:
    """What one phase cost: calls (``errors`` of them with a status >= 400), tokens in and
    out, calls whose response reported no usage (``unmetered``), summed latency."""

    phase: str
    calls: int
    errors: int
    input_tokens: int
    output_tokens: int
    unmetered: int
    seconds: float
    #: The model of these calls, for a row of :attr:`CostSummary.models`; ``None`` in a
    #: phase's total (:attr:`CostSummary.phases`) and for calls that named no model.
    model: str | None = None

    def __add__(self, other: PhaseCost) -> PhaseCost:
        """Both phases' calls, tokens and seconds summed, under this one's name and model."""
        return PhaseCost(
            self.phase,
            self.calls + other.calls,
            self.errors + other.errors,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.unmetered + other.unmetered,
            self.seconds + other.seconds,
            self.model,
        )

    @classmethod
    def of(cls, phase: str, calls: Sequence[ProxyCall], model: str | None = None) -> PhaseCost:
        """The cost of ``calls``, under ``phase`` and ``model``."""
        return cls(
            phase=phase,
            calls=len(calls),
            errors=sum(c.status >= 400 for c in calls),
            input_tokens=sum(c.input_tokens or 0 for c in calls),
            output_tokens=sum(c.output_tokens or 0 for c in calls),
            unmetered=sum(c.input_tokens is None for c in calls),
            seconds=sum(c.seconds for c in calls),
            model=model,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``model`` only in a per-model row)."""
        found: dict[str, Any] = {"phase": self.phase}
        if self.model is not None:
            found["model"] = self.model
        return found | {
            "calls": self.calls,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "unmetered": self.unmetered,
            "seconds": round(self.seconds, 6),
        }


@dataclass(frozen=True, slots=True)
class CostSummary:
    """The cost of every phase that made a call: the :data:`PHASES` first, in their order,
    then any other phase in the order it first appeared; ``models`` splits each phase by
    the model its calls named (in the order each model first appeared), so an answerer
    and a judge apart are counted apart."""

    phases: tuple[PhaseCost, ...]
    models: tuple[PhaseCost, ...] = ()

    @classmethod
    def of(cls, calls: Iterable[ProxyCall]) -> Self:
        """The summary of ``calls``."""
        grouped: dict[str, list[ProxyCall]] = {}
        by_model: dict[tuple[str, str | None], list[ProxyCall]] = {}
        for call in calls:
            grouped.setdefault(call.phase, []).append(call)
            by_model.setdefault((call.phase, call.model), []).append(call)
        order = _phase_order(grouped)
        return cls(
            tuple(PhaseCost.of(phase, grouped[phase]) for phase in order),
            tuple(
                PhaseCost.of(phase, found, model)
                for phase in order
                for (of, model), found in by_model.items()
                if of == phase
            ),
        )

    @classmethod
    def summed(cls, summaries: Iterable[CostSummary]) -> Self:
        """Every summary's phases (and models) added up, phase by phase (and model by
        model), in the order :meth:`of` gives."""
        totals: dict[str, PhaseCost] = {}
        models: dict[tuple[str, str | None], PhaseCost] = {}
        for summary in summaries:
            for cost in summary.phases:
                was = totals.get(cost.phase)
                totals[cost.phase] = cost if was is None else was + cost
            for cost in summary.models:
                key = (cost.phase, cost.model)
                had = models.get(key)
                models[key] = cost if had is None else had + cost
        order = _phase_order(totals)
        return cls(
            tuple(totals[phase] for phase in order),
            tuple(cost for phase in order for (of, _), cost in models.items() if of == phase),
        )

    @classmethod
    def from_json(
        cls, data: Iterable[Mapping[str, Any]], models: Iterable[Mapping[str, Any]] = ()
    ) -> Self:
        """The inverse of :meth:`to_json` (``data``) and of :meth:`models_json`
        (``models``); ``ValueError`` naming a missing or mistyped field."""
        return cls(tuple(map(_phase_cost, data)), tuple(map(_phase_cost, models)))

    def __getitem__(self, phase: str) -> PhaseCost:
        """The cost of ``phase``; a phase without calls costs nothing."""
        for cost in self.phases:
            if cost.phase == phase:
                return cost
        return PhaseCost(phase, 0, 0, 0, 0, 0, 0.0)

    def to_json(self) -> list[dict[str, Any]]:
        """JSON-ready: one dict per phase, in order."""
        return [cost.to_json() for cost in self.phases]

    def models_json(self) -> list[dict[str, Any]]:
        """JSON-ready: one dict per phase and model, in order."""
        return [cost.to_json() for cost in self.models]


def _phase_order(found: Iterable[str]) -> list[str]:
    """The phases of ``found``: the :data:`PHASES` first, then the others as they came."""
    seen = list(dict.fromkeys(found))
    return [p for p in PHASES if p in seen] + [p for p in seen if p not in PHASES]


def _phase_cost(item: Mapping[str, Any]) -> PhaseCost:
    """A :class:`PhaseCost` from its JSON; ``ValueError`` naming what is wrong."""
    model = item.get("model")
    try:
        if not isinstance(model, (str, type(None))):
            raise TypeError(f"model must be a string, got {model!r}")
        return PhaseCost(
            phase=str(item["phase"]),
            calls=int(item["calls"]),
            errors=int(item["errors"]),
            input_tokens=int(item["input_tokens"]),
            output_tokens=int(item["output_tokens"]),
            unmetered=int(item["unmetered"]),
            seconds=float(item["seconds"]),
            model=model,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"phase cost {item!r}: {type(exc).__name__}: {exc}") from None


def _api(path: str) -> str:
    route = path.split("?", 1)[0].rstrip("/")
    for suffix, api in (
        ("/chat/completions", "chat"),
        ("/embeddings", "embeddings"),
        ("/messages", "messages"),
        ("/responses", "responses"),
    ):
        if route.endswith(suffix):
            return api
    return "other"


def _json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _is_count(value: object) -> TypeGuard[int]:
    """A token count as a server may report it: an int, not a bool (JSON ``true``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _usage_tokens(usage: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(input, output) tokens of an OpenAI or Anthropic ``usage`` object; input ``None``
    when it reports none (an Anthropic ``message_delta`` reports only output)."""
    output = usage.get("completion_tokens", usage.get("output_tokens"))
    output = output if _is_count(output) else None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    if not _is_count(prompt):
        return None, output
    cached = sum(
        value
        for key in ("cache_creation_input_tokens", "cache_read_input_tokens")
        if _is_count(value := usage.get(key))
    )
    return prompt + cached, output or 0


def _tokens(body: bytes, content_type: str) -> tuple[int | None, int | None]:
    """Tokens reported by a JSON body or by a server-sent event stream's events (OpenAI's
    final usage chunk; Anthropic's ``message_start`` and last ``message_delta``)."""
    if "text/event-stream" in content_type:
        found: tuple[int | None, int | None] = (None, None)
        for line in body.decode("utf-8", "replace").splitlines():
            event = _json(line[5:]) if line.startswith("data:") else None
            if not isinstance(event, Mapping):
                continue
            usage = event.get("usage")
            message = event.get("message")
            # Anthropic nests the usage in a ``message`` object; in any other event
            # ``message`` may be anything (a string, a list) and holds no usage.
            if usage is None and isinstance(message, Mapping):
                usage = message.get("usage")
            if isinstance(usage, Mapping):
                prompt, output = _usage_tokens(usage)
                # Anthropic: input in message_start, the running output count in each
                # message_delta; OpenAI: one final chunk with both.
                found = (prompt if prompt is not None else found[0], output or found[1])
        return found
    document = _json(body)
    usage = document.get("usage") if isinstance(document, Mapping) else None
    return _usage_tokens(usage) if isinstance(usage, Mapping) else (None, None)


class RecordingProxy:
    """An HTTP proxy on ``127.0.0.1`` in front of an OpenAI- or Anthropic-compatible server,
    recording calls, tokens and latency per phase.

    Point the system under test at :attr:`openai_base_url` (or
    :attr:`anthropic_base_url`) instead of ``upstream`` (``http://`` or ``https://``,
    e.g. a :class:`~himga.llm.FakeLLMServer` or a provider's API);
    every request is forwarded unchanged, path included, and its response returned
    unchanged, passed on as its bytes arrive. Calls are
    attributed to the phase set by :meth:`phase` when they arrive (``"unattributed"``
    outside any): phases are time windows, so calls made concurrently for two
    phases need one proxy each. ``on_call`` is called with each call once it is
    recorded, on the proxy's thread serving it (``himga eval`` appends it to the
    run's ``calls.jsonl``). The proxy answers on kept-alive connections without
    Nagle's delay, so it adds no ~40 ms stall per call.
    """

    def __init__(
        self,
        upstream: str,
        *,
        timeout: float = 600.0,
        on_call: Callable[[ProxyCall], None] | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MeteringConfigError(
                f"RecordingProxy: upstream must be an http:// or https:// URL, got {upstream!r}"
            )
        self.upstream = upstream.rstrip("/")
        self.timeout = timeout
        self._on_call = on_call
        self._upstream = parts
        self._lock = threading.Lock()
        self._calls: list[ProxyCall] = []
        # Calls whose reply a client may already hold but which are not yet recorded.
        self._replying = 0
        # Calls arrived and not yet recorded, in order: those still without a reply when
        # the proxy settles are recorded as failed then (a hung upstream).
        self._waiting: list[_Arrival] = []
        self._recorded = threading.Condition(self._lock)
        self._phase = "unattributed"
        self._service: LoopbackService | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._service is not None else "not started"
        return f"RecordingProxy({self.upstream!r}, {where})"

    def __enter__(self) -> Self:
        self._service = LoopbackService(_handler(self), name="himga-recording-proxy")
        self._service.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._service is not None:
            self._service.stop()
        self._service = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, the proxy's root."""
        if self._service is None:
            raise RuntimeError("RecordingProxy is not running; use it as a context manager")
        return self._service.base_url

    @property
    def url(self) -> str:
        """``upstream`` as the proxy serves it: the proxy's root plus the upstream's path
        (give a client this in place of ``upstream``)."""
        return self.base_url + self._upstream.path.rstrip("/")

    @property
    def openai_base_url(self) -> str:
        """For ``OPENAI_BASE_URL``: the proxy's root plus the upstream's path, or ``/v1``."""
        return self.base_url + (self._upstream.path.rstrip("/") or "/v1")

    @property
    def anthropic_base_url(self) -> str:
        """For ``ANTHROPIC_BASE_URL``: :attr:`url`."""
        return self.url

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attribute the calls arriving inside the ``with`` block to ``name``."""
        with self._lock:
            previous, self._phase = self._phase, name
        try:
            yield
        finally:
            with self._lock:
                self._phase = previous

    def settle(self) -> None:
        """Wait until every call whose reply the proxy has begun to pass on is recorded
        and given to ``on_call``; record each call still without a reply as failed.

        A reply's last byte can reach its client a moment before the proxy records
        the call, so a reader that needs every call its clients have had answered
        (the costs of a run, of a Ray task) settles first. Calls whose reply has not
        begun are not waited for: their clients have given up on them (a hung
        upstream, past the client's deadline), so each is recorded now, status 504 and
        no usage, and not again should the upstream answer later. One being relayed (a
        stream) is waited for, to its end -- so never settle on a thread that still
        holds an unfinished reply.
        """
        with self._recorded:
            self._recorded.wait_for(lambda: self._replying == 0)
            hung = [arrival for arrival in self._waiting if not arrival.begun]
            self._waiting = [arrival for arrival in self._waiting if arrival.begun]
        now = time.perf_counter()
        for arrival in hung:
            seconds = now - arrival.started
            self._keep(
                ProxyCall(arrival.phase, _api(arrival.path), arrival.path, 504, None, None, seconds)
            )

    @property
    def calls(self) -> list[ProxyCall]:
        """Every call recorded so far, in the order their responses completed
        (:meth:`settle` first to include each call a client has had answered)."""
        with self._lock:
            return list(self._calls)

    def summary(self) -> CostSummary:
        """The calls recorded so far, summed per phase."""
        return CostSummary.of(self.calls)

    def _arrives(self, path: str) -> _Arrival:
        """A call arriving now, in the current phase, waiting for its reply."""
        with self._lock:
            arrival = _Arrival(self._phase, path, time.perf_counter())
            self._waiting.append(arrival)
        return arrival

    def _replying_begins(self, arrival: _Arrival) -> None:
        with self._lock:
            arrival.begun = True
            self._replying += 1

    def _replying_ends(self) -> None:
        with self._recorded:
            self._replying -= 1
            self._recorded.notify_all()

    def _record(self, arrival: _Arrival, call: ProxyCall) -> None:
        with self._lock:
            if arrival not in self._waiting:
                return  # recorded as failed when the proxy settled without its reply
            self._waiting.remove(arrival)
        self._keep(call)

    def _keep(self, call: ProxyCall) -> None:
        with self._lock:
            self._calls.append(call)
        if self._on_call is not None:
            self._on_call(call)

    def _connection(self) -> http.client.HTTPConnection:
        parts = self._upstream
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        return connection_class(parts.hostname or "", parts.port, timeout=self.timeout)


@dataclass(eq=False)
class _Arrival:
    """A call as it arrived: its phase, path and start, and whether its reply has begun."""

    phase: str
    path: str
    started: float
    begun: bool = False


class _Relay:
    """Passes every byte read from an upstream reply on to the client as it arrives.

    :meth:`response` stands in for :class:`http.client.HTTPResponse` on the
    upstream connection: the response parses the reply (framing, status, body) as
    usual, from a socket whose reads are also written to the client unchanged.
    """

    def __init__(self, client: Any, on_begin: Callable[[], None]) -> None:
        self._client = client
        self._on_begin = on_begin
        self.passed = 0
        self.begun = False

    def response(self, sock: socket.socket, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:
        return http.client.HTTPResponse(_Tee(sock, self), *args, **kwargs)  # type: ignore[arg-type]

    def begin(self) -> None:
        """Called before the first byte of the reply goes to the client."""
        if not self.begun:
            self.begun = True
            self._on_begin()

    def pass_on(self, data: bytes) -> None:
        self.begin()
        self._client.write(data)
        self.passed += len(data)


class _Tee(io.RawIOBase):
    """The socket as :class:`http.client.HTTPResponse` reads it, each read passed on."""

    def __init__(self, sock: socket.socket, relay: _Relay) -> None:
        self._sock = sock
        self._relay = relay

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._sock.recv_into(buffer)
        self._relay.pass_on(bytes(memoryview(buffer)[:count]))
        return count


def _handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        upstream: http.client.HTTPConnection | None = None

        def setup(self) -> None:
            super().setup()
            # Without this, a small response on a kept-alive connection waits for the
            # client's delayed ACK (Nagle): ~40 ms per call.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the calls are recorded, not logged."""

        def _forward(self) -> None:
            arrival = proxy._arrives(self.path)
            relay = _Relay(self.wfile, lambda: proxy._replying_begins(arrival))
            try:
                self._relay_call(relay, arrival)
            finally:
                if relay.begun:
                    proxy._replying_ends()

        def _relay_call(self, relay: _Relay, arrival: _Arrival) -> None:
            phase = arrival.phase
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED}
            headers["Accept-Encoding"] = "identity"  # usage is read from the body
            started = time.perf_counter()
            try:
                if self.upstream is None:
                    self.upstream = proxy._connection()
                # The reply is passed on byte for byte as it is read, so a client's own
                # deadline sees a slow upstream as it is.
                self.upstream.response_class = relay.response  # type: ignore[assignment]
                try:
                    self.upstream.request(self.command, self.path, body, headers)
                    response = self.upstream.getresponse()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    if relay.passed:
                        raise
                    # a kept-alive upstream connection closed while idle: reconnect once
                    self.upstream.close()
                    self.upstream.request(self.command, self.path, body, headers)
                    response = self.upstream.getresponse()
                payload = response.read()
                status = response.status
                content_type = response.getheader("Content-Type", "")
            except (OSError, http.client.HTTPException) as exc:
                # Unreachable, cut off mid-reply, or the client left (its deadline): the
                # call counts, as failed.
                status, payload, content_type = 502, b"", ""
                if self.upstream is not None:
                    self.upstream.close()
                    self.upstream = None
                if relay.passed:
                    self.close_connection = True  # the reply was begun: end it by closing
                else:
                    message = json.dumps({"error": {"message": f"upstream unreachable: {exc}"}})
                    relay.begin()
                    try:
                        self._reply(502, {"Content-Type": "application/json"}, message.encode())
                    except OSError:
                        self.close_connection = True  # the client left; the call still counts
            else:
                if response.will_close:
                    self.close_connection = True  # as the upstream's reply said it would
            seconds = time.perf_counter() - started
            input_tokens, output_tokens = _tokens(payload, content_type)
            asked = _json(body) if body else None
            model = asked.get("model") if isinstance(asked, Mapping) else None
            proxy._record(
                arrival,
                ProxyCall(
                    phase,
                    _api(self.path),
                    self.path,
                    status,
                    input_tokens,
                    output_tokens,
                    seconds,
                    model if isinstance(model, str) else None,
                ),
            )

        def _reply(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

    return Handler

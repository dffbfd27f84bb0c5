"""The recording proxy: calls, tokens and latency per phase, through the official SDKs."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import struct
import threading

import pytest

from himga.data.schema import Message, Session
from himga.integrations import Mem0Memory
from himga.llm import FakeLLMServer, word_count
from himga.llm._protocol import ChatMessage
from himga.metering import (
    CostSummary,
    MeteringConfigError,
    PhaseCost,
    ProxyCall,
    RecordingProxy,
    RunMeter,
)
from himga.metering import _proxy as proxy_module
from himga.metering._proxy import _tokens

pytestmark = pytest.mark.usefixtures("loopback_only")


def test_openai_and_anthropic_calls_are_counted_per_phase() -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    with FakeLLMServer() as server, RecordingProxy(server.base_url) as proxy:
        chat = openai.OpenAI(base_url=proxy.openai_base_url, api_key="k", max_retries=0)
        claude = anthropic.Anthropic(base_url=proxy.anthropic_base_url, api_key="k", max_retries=0)
        with proxy.phase("answering"):
            reply = chat.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "one two three"}]
            )
        with proxy.phase("judging"):
            claude.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "four five"}]
            )
            claude.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "six"}]
            )
        chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        proxy.settle()
        calls = proxy.calls
    assert reply.choices[0].message.content == "echo: one two three"  # returned unchanged
    assert [(c.phase, c.api, c.status) for c in calls] == [
        ("answering", "chat", 200),
        ("judging", "messages", 200),
        ("judging", "messages", 200),
        ("unattributed", "chat", 200),
    ]
    assert calls[0].input_tokens == word_count("one two three")
    assert calls[0].output_tokens == word_count("echo: one two three")
    summary = CostSummary.of(calls)
    assert [cost.phase for cost in summary.phases] == ["answering", "judging", "unattributed"]
    judging = summary["judging"]
    assert (judging.calls, judging.errors, judging.unmetered) == (2, 0, 0)
    assert judging.input_tokens == word_count("four five") + word_count("six")
    assert judging.seconds == pytest.approx(calls[1].seconds + calls[2].seconds)
    assert summary["ingest"] == PhaseCost("ingest", 0, 0, 0, 0, 0, 0.0)
    assert json.loads(json.dumps(summary.to_json()))[0]["calls"] == 1


def test_mem0_ingest_cost_is_its_own_phase() -> None:
    def extract(messages: list[ChatMessage]) -> str:
        return json.dumps({"memory": [{"text": "Caroline hikes."}]})

    with FakeLLMServer(responder=extract) as server, RecordingProxy(server.base_url) as proxy:
        memory = Mem0Memory(infer=True, embedder="hash", llm_base_url=proxy.openai_base_url)
        session = Session("s1", [], "8 May, 2023")
        with proxy.phase("ingest"):
            memory.ingest(Message("Caroline", "I went hiking.", "D1:1"), session)
            memory.ingest(Message("Melanie", "Nice!", "D1:2"), session)
        with proxy.phase("retrieval"):
            hits = memory.search("hiking", 5)
        proxy.settle()  # the last reply can reach mem0 before the proxy records its call
        summary = proxy.summary()
    assert [hit.turn_id for hit in hits] == ["D1:1"]  # the second fact was a duplicate
    assert summary["ingest"].calls == 2
    assert summary["ingest"].input_tokens > 0
    assert summary["retrieval"].calls == 0  # mem0 searches without its LLM


def test_an_unreachable_upstream_is_a_recorded_502() -> None:
    openai = pytest.importorskip("openai")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    with RecordingProxy(f"http://127.0.0.1:{port}") as proxy:
        chat = openai.OpenAI(base_url=proxy.openai_base_url, api_key="k", max_retries=0)
        with proxy.phase("ingest"), pytest.raises(openai.APIStatusError, match="unreachable"):
            chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        proxy.settle()
        assert proxy.calls == [
            ProxyCall(
                "ingest",
                "chat",
                "/v1/chat/completions",
                502,
                None,
                None,
                proxy.calls[0].seconds,
                "m",  # the model the request named, though no upstream answered
            )
        ]
    assert proxy.summary()["ingest"].errors == 1


def test_usage_is_read_from_json_and_event_streams() -> None:
    openai_json = b'{"usage": {"prompt_tokens": 7, "completion_tokens": 2}}'
    assert _tokens(openai_json, "application/json") == (7, 2)
    embeddings = b'{"data": [], "usage": {"prompt_tokens": 5, "total_tokens": 5}}'
    assert _tokens(embeddings, "application/json") == (5, 0)
    cached = b'{"usage": {"input_tokens": 3, "cache_read_input_tokens": 4, "output_tokens": 1}}'
    assert _tokens(cached, "application/json") == (7, 1)
    assert _tokens(b'{"choices": []}', "application/json") == (None, None)
    assert _tokens(b"not json", "text/plain") == (None, None)
    anthropic_stream = (
        b'event: message_start\ndata: {"type": "message_start", "message": {"usage": '
        b'{"input_tokens": 9, "output_tokens": 1}}}\n\n'
        b'data: {"type": "content_block_delta"}\n\n'
        b'data: {"type": "message_delta", "usage": {"output_tokens": 6}}\n\ndata: [DONE]\n'
    )
    assert _tokens(anthropic_stream, "text/event-stream; charset=utf-8") == (9, 6)
    openai_stream = (
        b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n'
        b'data: {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}}\n\n'
        b"data: [DONE]\n\n"
    )
    assert _tokens(openai_stream, "text/event-stream") == (4, 3)


def test_upstream_must_be_an_http_url() -> None:
    with pytest.raises(MeteringConfigError, match="upstream must be"):
        RecordingProxy("127.0.0.1:8000")
    with pytest.raises(RuntimeError, match="not running"):
        _ = RecordingProxy("http://127.0.0.1:1").base_url


class _OneCallUpstream:
    """An upstream on loopback that reads one request and answers it with :meth:`_answer`."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        raise NotImplementedError


class _SlowUpstream(_OneCallUpstream):
    """An upstream that sends its reply's head and first chunk, then the rest when told."""

    BODY = b'{"usage": {"prompt_tokens": 4, "completion_tokens": 2}}'

    def __init__(self) -> None:
        self.go_on = threading.Event()
        super().__init__()

    def _answer(self, connection: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        connection.sendall(head + b"transfer-encoding: chunked\r\n\r\n5\r\n" + self.BODY[:5])
        self.go_on.wait(10)
        rest = self.BODY[5:]
        with contextlib.suppress(OSError):  # the client may have left
            connection.sendall(b"\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))


def test_a_reply_is_passed_on_as_its_bytes_arrive() -> None:
    upstream = _SlowUpstream()
    with RecordingProxy(upstream.url) as proxy:
        client = http.client.HTTPConnection("127.0.0.1", int(proxy.base_url.rsplit(":", 1)[1]))
        client.request("POST", "/v1/chat/completions", b"{}")
        response = client.getresponse()  # the head arrived before the reply is complete
        assert response.read1(5) == upstream.BODY[:5]
        assert proxy.calls == []  # counted once complete, which it is not yet
        upstream.go_on.set()
        assert response.read() == upstream.BODY[5:]
        client.close()
        proxy.settle()
        (call,) = proxy.calls
    assert (call.status, call.input_tokens, call.output_tokens) == (200, 4, 2)


def test_a_client_leaving_mid_reply_is_a_failed_call_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream = _SlowUpstream()
    with RecordingProxy(upstream.url) as proxy:
        client = socket.create_connection(("127.0.0.1", int(proxy.base_url.rsplit(":", 1)[1])))
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
        assert client.recv(65536).startswith(b"HTTP/1.1 200 OK")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, as a client at its deadline does
        upstream.go_on.set()
        proxy.settle()  # the proxy notices the client left once it passes on the rest
        (call,) = proxy.calls
    assert call.status == 502
    assert "Traceback" not in capsys.readouterr().err


def test_settle_waits_for_a_call_answered_but_not_yet_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reply's last byte can reach the client before its call is recorded (on the
    proxy's thread); the costs of a run are read after settling, so none is missed."""
    openai = pytest.importorskip("openai")
    release = threading.Event()
    tokens = proxy_module._tokens

    def recorded_late(body: bytes, content_type: str) -> tuple[int | None, int | None]:
        release.wait(10)
        return tokens(body, content_type)

    monkeypatch.setattr(proxy_module, "_tokens", recorded_late)
    seen: list[ProxyCall] = []
    with FakeLLMServer() as server, RunMeter(seen.append) as meter:
        chat = openai.OpenAI(
            base_url=meter.answer_upstream(server.base_url) + "/v1", api_key="k", max_retries=0
        )
        with meter.answer_phase("answering"):
            chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "x y"}])
        assert seen == []  # answered, not yet recorded
        threading.Timer(0.05, release.set).start()
        meter.settle()
        expected = [("answering", 200, word_count("x y"))]
        assert [(c.phase, c.status, c.input_tokens) for c in seen] == expected
        meter.settle()  # nothing left to wait for


class _StreamUpstream(_OneCallUpstream):
    """An upstream that answers with ``body`` as a server-sent event stream."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        super().__init__()

    def _answer(self, connection: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        length = b"content-length: %d\r\n\r\n" % len(self.body)
        connection.sendall(head + length + self.body)


def test_an_event_stream_with_odd_message_and_usage_values_is_counted_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream = (
        b'data: {"type": "error", "message": "overloaded"}\n\n'
        b'data: {"message": ["a", "list"]}\n\n'
        b'data: {"message": null, "usage": {"prompt_tokens": true, "completion_tokens": 2}}\n\n'
        b"data: [DONE]\n\n"
    )
    assert _tokens(stream, "text/event-stream") == (None, 2)
    upstream = _StreamUpstream(stream)
    with RecordingProxy(upstream.url) as proxy:
        client = http.client.HTTPConnection("127.0.0.1", int(proxy.base_url.rsplit(":", 1)[1]))
        client.request("POST", "/v1/chat/completions", b"{}")
        assert client.getresponse().read() == stream
        client.close()
        proxy.settle()
        (call,) = proxy.calls
    assert (call.status, call.input_tokens, call.output_tokens) == (200, None, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_the_names_that_moved_to_metering_keep_a_deprecated_alias() -> None:
    import himga.integrations
    import himga.metering

    for name in ("PHASES", "CostSummary", "PhaseCost", "ProxyCall", "RecordingProxy"):
        with pytest.warns(DeprecationWarning, match=f"from himga.metering import {name}"):
            moved = getattr(himga.integrations, name)
        assert moved is getattr(himga.metering, name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        himga.integrations.Nope  # noqa: B018

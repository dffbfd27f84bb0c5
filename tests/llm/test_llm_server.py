"""FakeLLMServer speaks both wire formats well enough for the official SDKs, and injects faults."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.client import HTTPConnection

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.llm import FakeLLMServer, echo_responder, word_count
from himga.llm._protocol import ChatMessage


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def _anthropic(server: FakeLLMServer, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", base_url=server.anthropic_base_url, max_retries=max_retries
    )


def _openai(server: FakeLLMServer, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="test-key", base_url=server.openai_base_url, max_retries=max_retries
    )


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, object]:
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.integration
def test_import_needs_no_sdk() -> None:
    code = (
        "import sys, himga.llm; "
        "bad = {'anthropic', 'openai', 'httpx', 'httpx2'} & set(sys.modules); "
        "print(sorted(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_anthropic_sdk_round_trip_with_system_and_usage(shared_server: FakeLLMServer) -> None:
    seen: list[list[ChatMessage]] = []

    def responder(messages: list[ChatMessage]) -> str:
        seen.append(messages)
        return "four words of reply"

    shared_server.responder = responder
    try:
        reply = _anthropic(shared_server).messages.create(
            model="claude-test",
            max_tokens=64,
            system="be brief",
            messages=[{"role": "user", "content": "what is the answer"}],
        )
    finally:
        shared_server.responder = echo_responder
    assert seen == [
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "what is the answer"},
        ]
    ]
    assert reply.model == "claude-test"
    assert reply.stop_reason == "end_turn"
    assert [block.text for block in reply.content if block.type == "text"] == [
        "four words of reply"
    ]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (2 + 4, 4)


def test_openai_sdk_round_trip_with_usage(shared_server: FakeLLMServer) -> None:
    reply = _openai(shared_server).chat.completions.create(
        model="gpt-test",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "say hello now"},
        ],
    )
    assert reply.model == "gpt-test"
    assert reply.choices[0].message.content == "echo: say hello now"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (5, 4)
    assert reply.usage.total_tokens == 9


def test_max_tokens_truncates_and_reports_it(shared_server: FakeLLMServer) -> None:
    long = "one two three four five six seven"
    message = _anthropic(shared_server).messages.create(
        model="m", max_tokens=3, messages=[{"role": "user", "content": long}]
    )
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 3
    completion = _openai(shared_server).chat.completions.create(
        model="m", max_tokens=2, messages=[{"role": "user", "content": long}]
    )
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == "echo: one"


def test_anthropic_rejects_system_role_in_messages(shared_server: FakeLLMServer) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        _anthropic(shared_server).messages.create(
            model="m",
            max_tokens=8,
            messages=[{"role": "system", "content": "x"}],
        )
    assert info.value.status_code == 400
    assert "messages.0.role" in info.value.message


def test_anthropic_rejects_sampling_parameters_from_api_2026_10_21(
    shared_server: FakeLLMServer,
) -> None:
    body = {
        "model": "m",
        "max_tokens": 8,
        "temperature": 0,
        "messages": [{"role": "user", "content": "x"}],
    }
    status, reply = _post(
        shared_server.anthropic_base_url + "/v1/messages",
        json.dumps(body).encode(),
        {"anthropic-version": "2026-10-21"},
    )
    assert (status, reply) == (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "temperature: Extra inputs are not permitted",
            },
        },
    )
    status, _ = _post(
        shared_server.anthropic_base_url + "/v1/messages",
        json.dumps(body).encode(),
        {"anthropic-version": "2023-06-01"},
    )
    assert status == 200
    status, _ = _post(shared_server.anthropic_base_url + "/v1/messages", json.dumps(body).encode())
    assert status == 400


def test_unknown_route_and_bad_json_get_error_bodies(shared_server: FakeLLMServer) -> None:
    status, body = _post(shared_server.base_url + "/v1/nowhere", b"{}")
    assert status == 404
    assert body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "no route for POST /v1/nowhere"},
    }
    status, body = _post(shared_server.openai_base_url + "/chat/completions", b"not json")
    assert status == 400
    assert isinstance(body, dict)
    assert body["error"]["type"] == "invalid_request_error"


def test_api_key_is_checked_when_configured() -> None:
    with FakeLLMServer(api_key="right") as server:
        wrong = anthropic.Anthropic(api_key="wrong", base_url=server.anthropic_base_url)
        with pytest.raises(anthropic.AuthenticationError):
            wrong.messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
            )
        right = openai.OpenAI(api_key="right", base_url=server.openai_base_url)
        right.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert [r.status for r in server.requests] == [401, 200]
        assert "right" not in repr(server)


@pytest.mark.parametrize("status", [429, 500, 529])
def test_injected_fault_is_retried_by_both_sdks(status: int) -> None:
    with FakeLLMServer(faults=[status]) as server:
        _anthropic(server, max_retries=1).messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
        server.inject(status)
        _openai(server, max_retries=1).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        assert [r.status for r in server.requests] == [status, 200, status, 200]


def test_fault_bodies_follow_each_api() -> None:
    with FakeLLMServer(faults=[529, 429]) as server:
        with pytest.raises(anthropic.APIStatusError) as a_info:
            _anthropic(server).messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
            )
        assert a_info.value.status_code == 529
        assert a_info.value.body == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "injected fault 529"},
        }
        with pytest.raises(openai.RateLimitError) as o_info:
            _openai(server).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        assert o_info.value.response.headers["retry-after-ms"] == "1"
        assert o_info.value.code is None
        assert o_info.value.type == "rate_limit_exceeded"


def test_fail_first_fails_each_distinct_prompt_n_times() -> None:
    with FakeLLMServer(fail_first=2, fault_statuses=(429, 500)) as server:
        client = _openai(server, max_retries=2)
        for prompt in ["a", "b", "a"]:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}]
            )
        statuses = [(r.messages[-1]["content"], r.status) for r in server.requests]
    assert statuses == [
        ("a", 429),
        ("a", 500),
        ("a", 200),
        ("b", 429),
        ("b", 500),
        ("b", 200),
        ("a", 200),
    ]


def test_fault_rate_is_reproducible_with_a_seed() -> None:
    def statuses(seed: int) -> list[int]:
        with FakeLLMServer(fault_rate=0.5, seed=seed) as server:
            client = _openai(server, max_retries=0)
            for _ in range(20):
                with contextlib.suppress(openai.APIStatusError):
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "x"}]
                    )
            return [r.status for r in server.requests]

    first = statuses(7)
    assert first == statuses(7)
    assert 200 in first
    assert set(first) - {200} <= {429, 500, 529}
    assert len(set(first)) > 1


def test_many_concurrent_connections_and_busy_time() -> None:
    n = 80
    # Every reply waits until all n requests are inside the server: proves n concurrent
    # connections without relying on timing.
    barrier = threading.Barrier(n, timeout=60)

    def responder(messages: list[ChatMessage]) -> str:
        barrier.wait()
        return "ok"

    with FakeLLMServer(responder=responder, latency=0.05) as server:
        # The SDK's default pool allows 1000 connections, so all n can be open at once.
        client = openai.AsyncOpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)

        async def burst() -> None:
            await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": str(i)}]
                    )
                    for i in range(n)
                )
            )

        started = time.perf_counter()
        asyncio.run(burst())
        wall = time.perf_counter() - started
        assert [r.status for r in server.requests] == [200] * n
        assert server.max_in_flight == n
        assert 0.05 <= server.busy_seconds <= wall
        # Every request was in flight for at least the latency; no more than n at once.
        assert n * 0.05 <= server.in_flight_seconds <= n * server.busy_seconds
        server.reset_stats()
        assert server.request_count == server.max_in_flight == 0
        assert server.busy_seconds == server.in_flight_seconds == 0.0


def test_lifecycle_errors() -> None:
    server = FakeLLMServer()
    with pytest.raises(RuntimeError, match="not running"):
        server.base_url  # noqa: B018
    with server, pytest.raises(RuntimeError, match="already running"):
        server.start()
    server.stop()
    with pytest.raises(ValueError, match="fault_rate"):
        FakeLLMServer(fault_rate=2.0)
    with pytest.raises(ValueError, match=r"HTTP errors \(400-599\), got \[200\]"):
        FakeLLMServer(faults=[429, 200])
    with pytest.raises(ValueError, match="HTTP errors"):
        FakeLLMServer().inject(302)


_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=0, max_size=40)


@pytest.mark.slow
@given(system=_text, turns=st.lists(_text, min_size=1, max_size=4))
def test_usage_counts_words_on_both_apis(
    shared_server: FakeLLMServer, system: str, turns: list[str]
) -> None:
    roles = ["user", "assistant"]
    messages: list[ChatMessage] = [
        {"role": roles[i % 2], "content": text} for i, text in enumerate(turns)
    ]
    expected_reply = echo_responder(messages)
    reply_a = _anthropic(shared_server).messages.create(
        model="m",
        max_tokens=100,
        system=system,
        messages=messages,  # type: ignore[arg-type]
    )
    assert reply_a.usage.input_tokens == word_count(system) + sum(word_count(t) for t in turns)
    assert reply_a.usage.output_tokens == word_count(expected_reply)
    reply_o = _openai(shared_server).chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": system}, *messages],  # type: ignore[list-item]
    )
    assert reply_o.choices[0].message.content == expected_reply
    assert reply_o.usage is not None
    assert reply_o.usage.prompt_tokens == reply_a.usage.input_tokens


@pytest.mark.integration
def test_the_old_module_path_still_imports_the_same_server_and_says_it_moved() -> None:
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from himga.testing.llm_server import FakeLLMServer\n"
        "import himga.llm\n"
        "print(FakeLLMServer is himga.llm.FakeLLMServer)\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "True",
        "['himga.testing.llm_server moved to himga.llm: from himga.llm import FakeLLMServer']",
    ]


def _median_seconds(call: Callable[[], object], times: int = 60) -> float:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples[times // 6 :])  # the first calls warm up


def test_a_keep_alive_request_costs_few_bare_socket_round_trips() -> None:
    """With Nagle's algorithm on, every keep-alive reply waited ~40 ms for the client's
    delayed ACK (measured: 44 ms per request, over 1,000 bare loopback round trips);
    without it a request costs about 5-15 round trips here. The bound is relative, so
    a slow or loaded machine slows both sides alike."""
    echo = socket.create_server(("127.0.0.1", 0))

    def serve_echo() -> None:
        connection, _ = echo.accept()
        with connection:
            while data := connection.recv(4096):
                connection.sendall(data)

    threading.Thread(target=serve_echo, daemon=True).start()
    with socket.create_connection(echo.getsockname()) as bare, FakeLLMServer() as server:

        def round_trip() -> None:
            bare.sendall(b"x" * 64)
            bare.recv(4096)

        port = int(server.base_url.rsplit(":", 1)[1])
        http = HTTPConnection("127.0.0.1", port, timeout=10)  # one keep-alive connection
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})

        def request() -> None:
            http.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
            assert http.getresponse().read()

        per_request = _median_seconds(request)
        per_round_trip = _median_seconds(round_trip)
        http.close()
    echo.close()
    assert server.request_count >= 60  # every request reused one connection and was answered
    assert per_request < 200 * per_round_trip, (per_request, per_round_trip)

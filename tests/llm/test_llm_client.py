"""himga.llm clients, end to end through the official SDKs against a loopback FakeLLMServer."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import warnings
from collections.abc import Iterator

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga._extras import MissingExtraError
from himga.llm import (
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MODELS,
    AnthropicClient,
    ChatMessage,
    FakeLLMServer,
    LLMClient,
    LLMConfigError,
    LLMError,
    MissingAPIKeyError,
    OpenAIClient,
    SDKClient,
    TokenUsage,
    UnknownProviderError,
    echo_responder,
    get_client,
    word_count,
)
from tests.canned_llm import CannedLLMServer, anthropic_reply, openai_reply

PROVIDERS = ["anthropic", "openai"]
SECRET = "sk-test-0123456789-secret"
_ENV = [
    "LLM_PROVIDER",
    "HIMGA_MODEL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


def _url(server: FakeLLMServer, provider: str) -> str:
    return server.anthropic_base_url if provider == "anthropic" else server.openai_base_url


def _client(server: FakeLLMServer, provider: str, **settings: object) -> SDKClient:
    return get_client(
        provider,
        api_key=SECRET,
        base_url=_url(server, provider),
        **settings,  # type: ignore[arg-type]
    )


def _user(text: str) -> list[ChatMessage]:
    return [{"role": "user", "content": text}]


# -- configuration --------------------------------------------------------------------------


def test_provider_defaults_to_anthropic_and_follows_llm_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert isinstance(get_client(), AnthropicClient)
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    client = get_client()
    assert isinstance(client, OpenAIClient)
    assert client.provider == "openai"
    assert isinstance(get_client("anthropic"), AnthropicClient)  # the argument wins


def test_unknown_provider_names_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnknownProviderError, match=r"'gemini' \(from provider argument\)"):
        get_client("gemini")
    monkeypatch.setenv("LLM_PROVIDER", "cohere")
    with pytest.raises(UnknownProviderError, match=r"'cohere' \(from LLM_PROVIDER\).*anthropic"):
        get_client()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_key_says_which_variable_to_set(provider: str) -> None:
    variable = f"{provider.upper()}_API_KEY"
    with pytest.raises(MissingAPIKeyError, match=variable):
        get_client(provider)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_settings_come_from_env_then_defaults(
    provider: str, monkeypatch: pytest.MonkeyPatch, server: FakeLLMServer
) -> None:
    prefix = provider.upper()
    monkeypatch.setenv(f"{prefix}_API_KEY", SECRET)
    client = get_client(provider)
    assert client.model == DEFAULT_MODELS[provider]
    assert client.max_concurrency == DEFAULT_MAX_CONCURRENCY >= 16
    assert client.base_url.startswith("https://api.")
    monkeypatch.setenv(f"{prefix}_BASE_URL", _url(server, provider))
    monkeypatch.setenv("HIMGA_MODEL", "env-model")
    client = get_client(provider)
    assert (client.model, client.base_url) == ("env-model", _url(server, provider))
    assert client.chat(_user("hello")) == "echo: hello"
    assert server.requests[-1].body["model"] == "env-model"
    assert get_client(provider, model="kwarg-model").model == "kwarg-model"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_key_never_in_repr(provider: str, server: FakeLLMServer) -> None:
    client = _client(server, provider)
    assert SECRET not in repr(client)
    assert SECRET not in str(client)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_credentials_in_the_base_url_stay_out_of_repr_and_errors(provider: str) -> None:
    with FakeLLMServer(faults=[400]) as server:
        host = server.base_url.removeprefix("http://")
        url = _url(server, provider).replace("http://", "http://proxy-user:url-secret@")
        client = get_client(provider, api_key=SECRET, base_url=url)
        with pytest.raises(LLMError) as failure:
            client.chat(_user("hello"))
    for text in (repr(client), str(failure.value)):
        assert "url-secret" not in text
        assert host in text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_sdk_names_the_extra(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, provider, None)  # what an uninstalled package looks like
    with pytest.raises(MissingExtraError, match=rf"pip install 'himga\[{provider}\]'"):
        get_client(provider, api_key=SECRET)


def test_invalid_settings_are_rejected(server: FakeLLMServer) -> None:
    with pytest.raises(LLMConfigError, match="max_concurrency"):
        _client(server, "openai", max_concurrency=0)
    with pytest.raises(LLMConfigError, match="timeout"):
        _client(server, "anthropic", timeout=0)
    with pytest.raises(LLMConfigError, match="rejects sampling parameters"):
        _client(server, "anthropic", temperature=0.0)
    with pytest.raises(LLMConfigError, match="temperature"):
        _client(server, "openai", temperature=5.0)


def test_clients_satisfy_the_protocol(server: FakeLLMServer) -> None:
    for provider in PROVIDERS:
        assert isinstance(_client(server, provider), LLMClient)


# -- requests on the wire -------------------------------------------------------------------


def test_anthropic_maps_system_messages_to_the_system_parameter(server: FakeLLMServer) -> None:
    client = _client(server, "anthropic")
    messages: list[ChatMessage] = [
        {"role": "system", "content": "rule one"},
        {"role": "system", "content": "rule two"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    assert client.chat(messages, max_tokens=7) == "echo: bye"
    body = server.requests[-1].body
    assert body["system"] == "rule one\n\nrule two"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 7
    assert "temperature" not in body  # the 2026-10-21 API rejects it


def test_openai_sends_messages_as_given_with_temperature_zero(server: FakeLLMServer) -> None:
    client = _client(server, "openai")
    messages: list[ChatMessage] = [
        {"role": "system", "content": "rule"},
        {"role": "user", "content": "hi"},
    ]
    client.chat(messages)
    body = server.requests[-1].body
    assert body["messages"] == messages
    assert (body["temperature"], body["max_tokens"]) == (0.0, 1024)


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "must not be empty"),
        ([{"role": "tool", "content": "x"}], r"messages\[0\]: role 'tool'"),
        (
            [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}],
            r"messages\[1\]: a system message must come before",
        ),
        ([{"role": "system", "content": "only"}], "no user/assistant message"),
    ],
)
def test_anthropic_rejects_unmappable_messages(
    server: FakeLLMServer, messages: list[ChatMessage], error: str
) -> None:
    before = server.request_count
    with pytest.raises(ValueError, match=error):
        _client(server, "anthropic").chat(messages)
    assert server.request_count == before  # rejected before any request


# -- retries and failures -------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_injected_429_and_500_are_retried_then_succeed(provider: str) -> None:
    with FakeLLMServer(faults=[429, 500, 529]) as server:
        client = _client(server, provider, max_retries=3)
        assert client.chat(_user("retry me")) == "echo: retry me"
        assert [r.status for r in server.requests] == [429, 500, 529, 200]
        server.inject(500, 429)
        completion = asyncio.run(client.achat(_user("again")))
        assert completion.text == "echo: again"
        assert [r.status for r in server.requests][-3:] == [500, 429, 200]
        assert client.usage == TokenUsage(calls=2, input_tokens=3, output_tokens=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_exhausted_retries_raise_llm_error_chaining_the_sdk_error(provider: str) -> None:
    with FakeLLMServer(faults=[500] * 6) as server:
        client = _client(server, provider, max_retries=2)
        with pytest.raises(LLMError) as sync_info:
            client.chat(_user("x"))
        with pytest.raises(LLMError) as async_info:
            asyncio.run(client.achat(_user("x")))
        assert server.request_count == 6  # 1 + 2 retries, twice
    sdk_error = anthropic.APIStatusError if provider == "anthropic" else openai.APIStatusError
    for info in (sync_info, async_info):
        error = info.value
        assert (error.provider, error.status_code) == (provider, 500)
        assert isinstance(error.__cause__, sdk_error)
        assert "HTTP 500" in str(error)
        assert "max_retries=2" in str(error)
    assert client.usage == TokenUsage(calls=0, input_tokens=0, output_tokens=0, failed_calls=2)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_non_retryable_error_fails_at_once(provider: str) -> None:
    with FakeLLMServer(faults=[400, 400]) as server:
        client = _client(server, provider, max_retries=3)
        with pytest.raises(LLMError) as info:
            client.chat(_user("x"))
        assert info.value.status_code == 400
        assert server.request_count == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeouts_are_retried_then_raise(provider: str) -> None:
    # The server answers only after 1 s, so a 0.1 s timeout always fires.
    with FakeLLMServer(latency=1.0) as server:
        client = _client(server, provider, max_retries=1, timeout=0.1)
        with pytest.raises(LLMError) as info:
            client.chat(_user("slow"))
        assert info.value.status_code is None
        assert "Timeout" in str(info.value)
    assert server.request_count == 2


def test_key_never_in_error_messages() -> None:
    def leaky(messages: list[ChatMessage]) -> str:
        raise RuntimeError(f"server-side failure quoting {messages[-1]['content']}")

    with FakeLLMServer(responder=leaky) as server:
        for provider in PROVIDERS:
            client = _client(server, provider, max_retries=0)
            with pytest.raises(LLMError) as info:
                client.chat(_user(SECRET))
            assert info.value.status_code == 500
            assert SECRET not in str(info.value)
            assert "***" in str(info.value)


# -- concurrency ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrency_is_bounded_and_reached(provider: str) -> None:
    bound = 4
    # Each reply waits until `bound` requests are in the server at once: the run
    # finishes only if the client really keeps `bound` calls in flight.
    barrier = threading.Barrier(bound, timeout=30)

    def responder(messages: list[ChatMessage]) -> str:
        barrier.wait()
        return echo_responder(messages)

    with FakeLLMServer(responder=responder) as server:
        client = _client(server, provider, max_concurrency=bound, max_retries=0)

        async def burst() -> list[str]:
            completions = await asyncio.gather(
                *(client.achat(_user(f"q{i}")) for i in range(5 * bound))
            )
            return [c.text for c in completions]

        assert asyncio.run(burst()) == [f"echo: q{i}" for i in range(5 * bound)]
        assert server.max_in_flight == bound


@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_survives_repeated_asyncio_run_and_threads(
    provider: str, server: FakeLLMServer
) -> None:
    client = _client(server, provider, max_concurrency=3)

    async def burst(tag: str) -> list[str]:
        done = await asyncio.gather(*(client.achat(_user(f"{tag} {i}")) for i in range(6)))
        return [c.text for c in done]

    gc.collect()  # earlier tests' garbage must not be blamed on this one
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(burst("first")) == [f"echo: first {i}" for i in range(6)]
        assert asyncio.run(burst("second")) == [f"echo: second {i}" for i in range(6)]
        in_thread: list[list[str]] = []
        thread = threading.Thread(target=lambda: in_thread.append(asyncio.run(burst("t"))))
        thread.start()
        thread.join()
        assert in_thread == [[f"echo: t {i}" for i in range(6)]]
        gc.collect()
    # Each loop's SDK client was closed with its loop, not left to the garbage collector.
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert client.usage.calls == 18


@pytest.mark.parametrize("provider", PROVIDERS)
def test_sync_chat_works_inside_a_running_loop(provider: str, server: FakeLLMServer) -> None:
    client = _client(server, provider)

    async def caller() -> str:
        return client.chat(_user("from a coroutine"))

    assert asyncio.run(caller()) == "echo: from a coroutine"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_aclose_and_close_release_clients_and_allow_reuse(
    provider: str, server: FakeLLMServer
) -> None:
    client = _client(server, provider)

    async def twice() -> list[str]:
        first = await client.achat(_user("a"))
        await client.aclose()
        second = await client.achat(_user("b"))
        await client.aclose()
        return [first.text, second.text]

    assert asyncio.run(twice()) == ["echo: a", "echo: b"]
    client.chat(_user("c"))
    client.close()
    assert client.chat(_user("d")) == "echo: d"
    client.close()


# -- usage ----------------------------------------------------------------------------------

_words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=6)


@pytest.fixture(scope="module")
def shared_clients(server: FakeLLMServer) -> list[SDKClient]:
    return [_client(server, provider, max_concurrency=4) for provider in PROVIDERS]


# Each example starts an event loop, and so a new async SDK client: keep the count modest.
@pytest.mark.slow
@settings(max_examples=15)
@given(prompts=st.lists(_words.map(" ".join), min_size=1, max_size=8))
def test_usage_totals_equal_the_sum_of_per_call_usage(
    shared_clients: list[SDKClient], prompts: list[str]
) -> None:
    for client in shared_clients:
        before = client.usage

        async def run_all(client: SDKClient = client) -> list[int]:
            done = await asyncio.gather(*(client.achat(_user(p)) for p in prompts))
            return [c.input_tokens for c in done] + [c.output_tokens for c in done]

        per_call = asyncio.run(run_all())
        sync_text = client.chat(_user(prompts[0]))
        usage = client.usage
        n = len(prompts)
        assert per_call[:n] == [word_count(p) for p in prompts]
        assert usage.calls - before.calls == n + 1
        assert usage.input_tokens - before.input_tokens == sum(per_call[:n]) + word_count(
            prompts[0]
        )
        assert usage.output_tokens - before.output_tokens == sum(per_call[n:]) + word_count(
            sync_text
        )


@pytest.mark.usefixtures("loopback_only")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_null_token_counts_keep_the_answer_and_count_the_call_unmetered(provider: str) -> None:
    openai_null = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    with CannedLLMServer(
        openai=openai_reply("the answer", openai_null),
        anthropic=anthropic_reply("the answer", {"input_tokens": None, "output_tokens": None}),
    ) as upstream:
        base_url = getattr(upstream, f"{provider}_base_url")
        client = get_client(provider, api_key=SECRET, base_url=base_url, max_retries=0)
        assert client.chat(_user("q")) == "the answer"
        completion = asyncio.run(client.achat(_user("q")))
    assert (completion.text, completion.metered) == ("the answer", False)
    assert (completion.input_tokens, completion.output_tokens) == (0, 0)
    assert client.usage == TokenUsage(calls=2, unmetered_calls=2)

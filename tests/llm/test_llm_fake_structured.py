"""FakeLLMServer's JSON and tool-call answers, scripted per test, through the official SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga.llm import ChatRequest, FakeLLMServer, Reply, ToolCall, echo_responder

WEATHER_OPENAI: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
WEATHER_ANTHROPIC: Any = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": WEATHER_OPENAI["function"]["parameters"],
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
JSON_OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


@pytest.fixture(scope="module")
def clients(server: FakeLLMServer) -> tuple[openai.OpenAI, anthropic.Anthropic]:
    """One client per SDK for the property tests (building one costs more than a call)."""
    return _openai(server), _anthropic(server)


@pytest.fixture
def fresh(server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The shared server, its script empty and its statistics reset after the test."""
    yield server
    assert server.scripted == 0, "a test left scripted replies unconsumed"
    server.reset_stats()


def _openai(server: FakeLLMServer, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=max_retries)


def _anthropic(server: FakeLLMServer, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="k", base_url=server.anthropic_base_url, max_retries=max_retries
    )


ASK_JSON: Any = [
    {"role": "system", "content": "Reply with a JSON object."},
    {"role": "user", "content": "Extract the facts: I moved to Paris in May."},
]


# -- JSON object and JSON schema (OpenAI response_format) -----------------------------


def test_json_object_reply_through_the_openai_sdk(fresh: FakeLLMServer) -> None:
    fresh.script(json.dumps({"facts": ["moved to Paris in May"]}))
    completion = _openai(fresh).chat.completions.create(
        model="m", messages=ASK_JSON, response_format={"type": "json_object"}
    )
    assert json.loads(completion.choices[0].message.content or "") == {
        "facts": ["moved to Paris in May"]
    }
    seen = fresh.requests[-1].messages
    assert isinstance(seen, ChatRequest)
    assert (seen.api, seen.response_format, seen.json_schema) == ("openai", "json_object", None)


def test_json_object_without_the_word_json_is_a_400_as_the_real_api(
    fresh: FakeLLMServer,
) -> None:
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        _openai(fresh).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hello"}],
            response_format={"type": "json_object"},
        )


def test_a_reply_that_is_not_a_json_object_is_a_500_saying_why(fresh: FakeLLMServer) -> None:
    fresh.script("Sure! Here are the facts.", json.dumps(["a", "list"]))
    client = _openai(fresh)
    for _ in range(2):
        with pytest.raises(openai.InternalServerError, match="unusable reply: response_format"):
            client.chat.completions.create(
                model="m", messages=ASK_JSON, response_format={"type": "json_object"}
            )
    assert [r.status for r in fresh.requests] == [500, 500]


class Facts(pydantic.BaseModel):
    facts: list[str]
    confidence: float


def test_json_schema_reply_parses_into_the_model_through_the_openai_sdk(
    fresh: FakeLLMServer,
) -> None:
    def responder(request: ChatRequest) -> str:
        assert request.response_format == "json_schema"
        assert request.json_schema is not None
        return json.dumps({key: [] for key in request.json_schema["required"]} | {"confidence": 1})

    fresh.responder = responder
    try:
        completion = _openai(fresh).chat.completions.parse(
            model="m", messages=ASK_JSON, response_format=Facts
        )
    finally:
        fresh.responder = echo_responder
    assert completion.choices[0].message.parsed == Facts(facts=[], confidence=1.0)
    schema = fresh.requests[-1].messages
    assert isinstance(schema, ChatRequest)
    assert schema.json_schema is not None
    assert set(schema.json_schema["properties"]) == {"facts", "confidence"}


def test_json_without_a_required_key_of_the_schema_is_a_500(fresh: FakeLLMServer) -> None:
    fresh.script(json.dumps({"facts": []}))
    with pytest.raises(openai.InternalServerError, match=r"required keys \['confidence'\]"):
        _openai(fresh).chat.completions.parse(model="m", messages=ASK_JSON, response_format=Facts)


# -- tool calls ------------------------------------------------------------------------


def test_openai_tool_call_and_the_follow_up_turn(fresh: FakeLLMServer) -> None:
    fresh.script(Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"})]), "Sunny.")
    client = _openai(fresh)
    question: Any = {"role": "user", "content": "Weather in Paris?"}
    first = client.chat.completions.create(
        model="m", messages=[question], tools=[WEATHER_OPENAI], tool_choice="required"
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    follow_up: Any = [
        question,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "22 degrees, sun"},
    ]
    second = client.chat.completions.create(model="m", messages=follow_up, tools=[WEATHER_OPENAI])
    assert second.choices[0].message.content == "Sunny."
    assert second.choices[0].finish_reason == "stop"
    seen = fresh.requests[-1].messages
    assert isinstance(seen, ChatRequest)
    assert [m["role"] for m in seen] == ["user", "assistant", "tool"]
    assert seen[-1]["content"] == "22 degrees, sun"
    assert [tool.name for tool in seen.tools] == ["get_weather"]
    assert seen.tool_choice == "auto"


def test_anthropic_tool_use_and_the_follow_up_turn(fresh: FakeLLMServer) -> None:
    fresh.script(
        Reply(text="Let me look.", tool_calls=[ToolCall("get_weather", {"city": "Oslo"})]),
        "Cold.",
    )
    client = _anthropic(fresh)
    question: Any = {"role": "user", "content": "Weather in Oslo?"}
    first = client.messages.create(
        model="claude-test",
        max_tokens=64,
        messages=[question],
        tools=[WEATHER_ANTHROPIC],
        tool_choice={"type": "any"},
    )
    assert first.stop_reason == "tool_use"
    text, use = first.content
    assert text.type == "text"
    assert text.text == "Let me look."
    assert use.type == "tool_use"
    assert (use.name, use.input) == ("get_weather", {"city": "Oslo"})
    seen_first = fresh.requests[-1].messages
    assert isinstance(seen_first, ChatRequest)
    assert seen_first.tool_choice == "required"
    assert seen_first.tool("get_weather").parameters == WEATHER_ANTHROPIC["input_schema"]
    follow_up: Any = [
        question,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "-3 degrees"}],
        },
    ]
    second = client.messages.create(
        model="claude-test", max_tokens=64, messages=follow_up, tools=[WEATHER_ANTHROPIC]
    )
    assert second.stop_reason == "end_turn"
    assert [block.text for block in second.content if block.type == "text"] == ["Cold."]
    seen = fresh.requests[-1].messages
    assert [m["content"] for m in seen] == ["Weather in Oslo?", "Let me look.", "-3 degrees"]


def test_a_responder_answers_from_the_offered_tools(fresh: FakeLLMServer) -> None:
    """What an adapter's test does for a system that extracts with tools (LangMem)."""

    def responder(request: ChatRequest) -> str | Reply:
        if request.tools and request[-1]["role"] != "tool":
            tool = request.tools[0]
            required = tool.parameters.get("required", [])
            return Reply(tool_calls=[ToolCall(tool.name, {key: "x" for key in required})])
        return "done"

    fresh.responder = responder
    try:
        reply = _openai(fresh).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], tools=[WEATHER_OPENAI]
        )
    finally:
        fresh.responder = echo_responder
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert json.loads(call.function.arguments) == {"city": "x"}


@pytest.mark.parametrize(
    ("reply", "tool_choice", "problem"),
    [
        ("plain text", "required", "forces a tool call"),
        (Reply(tool_calls=[ToolCall("get_time")]), "auto", "names no tool offered"),
        (Reply(tool_calls=[ToolCall("get_weather", {"city": "x"})]), "none", "allows none"),
        (Reply(tool_calls=[ToolCall("get_weather", {"when": {1, 2}})]), "auto", "JSON object"),
    ],
)
def test_a_tool_reply_the_request_did_not_allow_is_a_500(
    fresh: FakeLLMServer, reply: str | Reply, tool_choice: Any, problem: str
) -> None:
    fresh.script(reply)
    with pytest.raises(openai.InternalServerError, match=problem):
        _openai(fresh).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "go"}],
            tools=[WEATHER_OPENAI],
            tool_choice=tool_choice,
        )


def test_a_forced_tool_must_be_offered_as_the_real_apis_say(fresh: FakeLLMServer) -> None:
    with pytest.raises(anthropic.BadRequestError, match="names no tool of the request"):
        _anthropic(fresh).messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": "go"}],
            tools=[WEATHER_ANTHROPIC],
            tool_choice={"type": "tool", "name": "get_time"},
        )


def test_a_streaming_request_is_refused_not_answered_in_the_wrong_format(
    fresh: FakeLLMServer,
) -> None:
    with pytest.raises(openai.BadRequestError, match="does not stream"):
        _openai(fresh).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )


# -- the script queue -------------------------------------------------------------------


def test_script_answers_in_order_then_the_responder_and_a_fault_consumes_nothing() -> None:
    with FakeLLMServer(replies=["one"], fail_first=1, fault_statuses=(500,)) as server:
        server.script("two")
        client = _openai(server, max_retries=1)  # each first attempt fails once, then retried

        def ask(text: str) -> str | None:
            messages: Any = [{"role": "user", "content": text}]
            reply = client.chat.completions.create(model="m", messages=messages)
            return reply.choices[0].message.content

        assert [ask("a"), ask("b"), ask("c d")] == ["one", "two", "echo: c d"]
        assert [r.status for r in server.requests] == [500, 200, 500, 200, 500, 200]
        assert server.scripted == 0


# -- laws: what is scripted is what the SDKs hand back ------------------------------------


@settings(max_examples=25, deadline=None)
@given(arguments=JSON_OBJECTS)
def test_tool_arguments_round_trip_through_both_sdks(
    server: FakeLLMServer,
    clients: tuple[openai.OpenAI, anthropic.Anthropic],
    arguments: dict[str, Any],
) -> None:
    call = Reply(tool_calls=[ToolCall("get_weather", arguments)])
    server.script(call, call)
    reply = clients[0].chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], tools=[WEATHER_OPENAI]
    )
    (openai_call,) = reply.choices[0].message.tool_calls or []
    assert openai_call.type == "function"
    assert json.loads(openai_call.function.arguments) == arguments
    message = clients[1].messages.create(
        model="claude-test",
        max_tokens=8,
        messages=[{"role": "user", "content": "go"}],
        tools=[WEATHER_ANTHROPIC],
    )
    (use,) = message.content
    assert use.type == "tool_use"
    assert use.input == arguments


@settings(max_examples=25, deadline=None)
@given(value=JSON_OBJECTS)
def test_a_json_object_reply_round_trips(
    server: FakeLLMServer, clients: tuple[openai.OpenAI, anthropic.Anthropic], value: dict[str, Any]
) -> None:
    server.script(json.dumps(value))
    reply = clients[0].chat.completions.create(
        model="m", messages=ASK_JSON, response_format={"type": "json_object"}
    )
    assert json.loads(reply.choices[0].message.content or "") == value

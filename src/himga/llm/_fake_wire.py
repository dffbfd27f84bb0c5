"""The wire formats :class:`~himga.llm.FakeLLMServer` speaks: requests in, replies out.

A request is read into a :class:`ChatRequest` (the conversation, OpenAI style,
plus the tools, tool choice and response format it asked for); a responder
answers it with a ``str`` or a :class:`Reply` (text and / or tool calls), which
is checked against what the request allowed and written in the request's API.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from himga._errors import HimgaError
from himga.llm._protocol import ChatMessage

__all__ = ["ChatRequest", "Reply", "Tool", "ToolCall", "word_count"]

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
_RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def word_count(text: str) -> int:
    """The fake server's token count for ``text``: its number of whitespace-separated words."""
    return len(text.split())


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the request offers: its name, description and JSON schema of its arguments
    (OpenAI's ``function.parameters``, Anthropic's ``input_schema``)."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of the tool ``name`` with ``arguments`` (a JSON object) in a :class:`Reply`."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """What a responder may answer besides a plain ``str``: text, tool calls, or both.

    The server writes ``tool_calls`` in the request's API (OpenAI ``tool_calls``
    with ``finish_reason="tool_calls"``, Anthropic ``tool_use`` blocks with
    ``stop_reason="tool_use"``), giving each call a fresh id.
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()


class ChatRequest(list[ChatMessage]):
    """One chat request as a responder sees it.

    It *is* the conversation, a list of OpenAI-style messages (an Anthropic
    ``system`` parameter first, as a ``"system"`` message; an OpenAI ``tool``
    message keeps role ``"tool"``; a tool result's text is its message's content),
    so a responder written for ``list[ChatMessage]`` works unchanged. It also
    says what the request asked for:

    * ``api``: ``"anthropic"`` or ``"openai"``; ``body``: the parsed JSON body,
      tool calls and results of earlier turns included;
    * ``tools``: the :class:`Tool` s offered, in order;
    * ``tool_choice``: ``"auto"`` (also when not given), ``"none"``,
      ``"required"`` (OpenAI ``required``, Anthropic ``any``) or the one tool's
      name the request forces;
    * ``response_format``: ``"text"``, ``"json_object"`` or ``"json_schema"``
      (OpenAI's ``response_format``), and ``json_schema`` the schema of the last.
    """

    api: str
    body: Mapping[str, Any]
    tools: tuple[Tool, ...]
    tool_choice: str
    response_format: str
    json_schema: Mapping[str, Any] | None

    def __init__(
        self,
        messages: Sequence[ChatMessage],
        *,
        api: str,
        body: Mapping[str, Any],
        tools: tuple[Tool, ...] = (),
        tool_choice: str = "auto",
        response_format: str = "text",
        json_schema: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(messages)
        self.api = api
        self.body = body
        self.tools = tools
        self.tool_choice = tool_choice
        self.response_format = response_format
        self.json_schema = json_schema

    def tool(self, name: str) -> Tool:
        """The offered tool called ``name``; ``KeyError`` if none is."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(f"the request offers no tool {name!r} (offered: {self._names()})")

    def _names(self) -> str:
        return ", ".join(tool.name for tool in self.tools) or "none"


class BadRequest(HimgaError):
    """The request body does not follow the wire format; the message says what is wrong."""


class BadReply(HimgaError):
    """A responder's reply is one the request could not have received from a real model."""


def parse_request(api: str, body: Any, headers: Any) -> ChatRequest:
    """``body`` as a :class:`ChatRequest`; raises :class:`BadRequest` if malformed."""
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model: field required")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("messages: expected a non-empty list")
    messages: list[ChatMessage] = []
    if api == "anthropic":
        version = headers.get("anthropic-version")
        if not version:
            raise BadRequest("anthropic-version: header is required")
        sampling = [name for name in _SAMPLING_PARAMETERS if name in body]
        if sampling and version >= _NO_SAMPLING_VERSION:
            raise BadRequest(f"{sampling[0]}: Extra inputs are not permitted")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            raise BadRequest("max_tokens: field required (a positive integer)")
        if "system" in body:
            messages.append({"role": "system", "content": _text_of(body["system"], "system")})
        messages.extend(_anthropic_messages(raw_messages))
        tools = _anthropic_tools(body.get("tools"))
        choice = _anthropic_tool_choice(body.get("tool_choice"), tools)
        return ChatRequest(messages, api=api, body=body, tools=tools, tool_choice=choice)
    messages.extend(_openai_messages(raw_messages))
    tools = _openai_tools(body.get("tools"))
    choice = _openai_tool_choice(body.get("tool_choice"), tools)
    response_format, schema = _response_format(body.get("response_format"), messages)
    return ChatRequest(
        messages,
        api=api,
        body=body,
        tools=tools,
        tool_choice=choice,
        response_format=response_format,
        json_schema=schema,
    )


def _text_of(content: Any, where: str) -> str:
    """The text of a message ``content``: a string or a list of text blocks / parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "tool_result":
                texts.append(_text_of(block.get("content", ""), f"{where}.content.{i}.content"))
            elif kind != "tool_use":  # a call's arguments are in the body, not the text
                raise BadRequest(f"{where}: content block type {kind!r} is not supported")
        return "".join(texts)
    raise BadRequest(f"{where}: content must be a string or a list of content blocks")


def _role_of(message: Any, where: str, allowed: frozenset[str]) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    if role not in allowed:
        raise BadRequest(
            f"{where}.role: unexpected role {role!r}; expected one of {sorted(allowed)}"
        )
    return str(role)


def _anthropic_messages(raw: list[Any]) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for i, message in enumerate(raw):
        where = f"messages.{i}"
        role = _role_of(message, where, frozenset({"user", "assistant"}))
        messages.append({"role": role, "content": _text_of(message.get("content"), where)})
    return messages


_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _openai_messages(raw: list[Any]) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for i, message in enumerate(raw):
        where = f"messages.{i}"
        role = _role_of(message, where, _OPENAI_ROLES)
        content = message.get("content")
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            raise BadRequest(f"{where}.tool_call_id: field required")
        if role == "assistant" and content is None and message.get("tool_calls"):
            content = ""  # a turn that only called tools
        messages.append({"role": role, "content": _text_of(content, where)})
    return messages


def _schema(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{where}: expected a JSON schema object")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{where}: field required (a non-empty string)")
    return value


def _tool_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest("tools: expected a list")
    return value


def _openai_tools(value: Any) -> tuple[Tool, ...]:
    tools = []
    for i, tool in enumerate(_tool_list(value)):
        where = f"tools.{i}"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise BadRequest(f"{where}.type: only 'function' tools are supported")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise BadRequest(f"{where}.function: field required")
        tools.append(
            Tool(
                _name(function.get("name"), f"{where}.function.name"),
                str(function.get("description", "")),
                _schema(function.get("parameters"), f"{where}.function.parameters"),
            )
        )
    return tuple(tools)


def _anthropic_tools(value: Any) -> tuple[Tool, ...]:
    tools = []
    for i, tool in enumerate(_tool_list(value)):
        where = f"tools.{i}"
        if not isinstance(tool, dict) or tool.get("type", "custom") != "custom":
            raise BadRequest(f"{where}: only client tools (name, input_schema) are supported")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise BadRequest(f"{where}.input_schema: field required")
        tools.append(
            Tool(_name(tool.get("name"), f"{where}.name"), str(tool.get("description", "")), schema)
        )
    return tuple(tools)


def _forced(name: str, tools: tuple[Tool, ...], where: str) -> str:
    if all(tool.name != name for tool in tools):
        raise BadRequest(f"{where}: names no tool of the request: {name!r}")
    return name


def _openai_tool_choice(value: Any, tools: tuple[Tool, ...]) -> str:
    if value is None:
        return "auto"
    if value in ("auto", "none", "required"):
        if value == "required" and not tools:
            raise BadRequest("tool_choice: 'required' needs tools")
        return str(value)
    if isinstance(value, dict) and value.get("type") == "function":
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        return _forced(_name(name, "tool_choice.function.name"), tools, "tool_choice")
    raise BadRequest(f"tool_choice: unsupported value {value!r}")


def _anthropic_tool_choice(value: Any, tools: tuple[Tool, ...]) -> str:
    if value is None:
        return "auto"
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        if not tools:
            raise BadRequest("tool_choice: 'any' needs tools")
        return "required"
    if kind == "tool":
        assert isinstance(value, dict)
        return _forced(_name(value.get("name"), "tool_choice.name"), tools, "tool_choice")
    raise BadRequest(f"tool_choice: unsupported value {value!r}")


def _response_format(
    value: Any, messages: list[ChatMessage]
) -> tuple[str, Mapping[str, Any] | None]:
    if value is None:
        return "text", None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in _RESPONSE_FORMATS:
        raise BadRequest(f"response_format.type: expected one of {list(_RESPONSE_FORMATS)}")
    assert isinstance(value, dict)
    if kind == "json_object" and not any("json" in m["content"].lower() for m in messages):
        # As the real API: JSON mode needs the prompt to ask for JSON.
        raise BadRequest(
            "messages: must contain the word 'json' in some form, to use 'response_format' "
            "of type 'json_object'"
        )
    if kind != "json_schema":
        return str(kind), None
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise BadRequest("response_format.json_schema: field required")
    _name(spec.get("name"), "response_format.json_schema.name")
    return kind, _schema(spec.get("schema"), "response_format.json_schema.schema")


def check_reply(request: ChatRequest, reply: Reply) -> None:
    """Raise :class:`BadReply` unless a real model could have answered ``request`` so."""
    offered = request._names()
    for call in reply.tool_calls:
        if request.tool_choice == "none" or not request.tools:
            raise BadReply(f"tool call {call.name!r}, but the request allows none")
        if all(tool.name != call.name for tool in request.tools):
            raise BadReply(f"tool call {call.name!r} names no tool offered ({offered})")
        try:
            if not isinstance(call.arguments, Mapping):
                raise TypeError(type(call.arguments).__name__)
            json.dumps(dict(call.arguments))
        except (TypeError, ValueError) as exc:
            raise BadReply(f"tool call {call.name!r}: arguments must be a JSON object") from exc
    if request.tool_choice not in ("auto", "none"):
        forced = request.tool_choice
        names = [call.name for call in reply.tool_calls]
        if not names or (forced != "required" and any(name != forced for name in names)):
            wanted = "a tool call" if forced == "required" else f"a call of {forced!r}"
            raise BadReply(f"the request forces {wanted}, the reply has {names or 'none'}")
    if request.response_format != "text" and not reply.tool_calls:
        _check_json(reply.text, request.response_format, request.json_schema)


def _check_json(text: str, kind: str, schema: Mapping[str, Any] | None) -> None:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BadReply(f"response_format {kind} needs JSON, the reply is {text[:60]!r}") from exc
    if kind == "json_object" and not isinstance(value, dict):
        raise BadReply(f"response_format json_object needs a JSON object, got {text[:60]!r}")
    if schema and schema.get("type") == "object":
        if not isinstance(value, dict):
            raise BadReply(f"the response schema wants an object, got {text[:60]!r}")
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            raise BadReply(f"the reply lacks the schema's required keys {missing}")


def max_tokens(api: str, body: Mapping[str, Any]) -> int | None:
    """The request's output limit (Anthropic's is required; OpenAI's optional)."""
    if api == "anthropic":
        return int(body["max_tokens"])
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return int(value) if isinstance(value, int) else None


def success_body(request: ChatRequest, reply: Reply) -> Any:
    """``reply`` in the request's API, its text cut to ``max_tokens`` words, usage in words."""
    limit = max_tokens(request.api, request.body)
    words = reply.text.split()
    truncated = limit is not None and len(words) > limit
    text = " ".join(words[:limit]) if truncated else reply.text
    calls = [(call, json.dumps(dict(call.arguments))) for call in reply.tool_calls]
    input_tokens = sum(word_count(m["content"]) for m in request)
    output_tokens = word_count(text) + sum(word_count(arguments) for _, arguments in calls)
    model = request.body["model"]
    if request.api == "anthropic":
        content: list[dict[str, Any]] = (
            [{"type": "text", "text": text}] if text or not calls else []
        )
        content.extend(
            {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex,
                "name": call.name,
                "input": dict(call.arguments),
            }
            for call in reply.tool_calls
        )
        stop = "max_tokens" if truncated else "tool_use" if calls else "end_turn"
        return {
            "id": "msg_" + uuid.uuid4().hex,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text if text or not calls else None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": "call_" + uuid.uuid4().hex,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
            for call, arguments in calls
        ]
    finish = "length" if truncated else "tool_calls" if calls else "stop"
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }


def error_body(api: str, status: int, message: str) -> Any:
    """The provider's error body for ``status``."""
    if api == "openai":
        kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}

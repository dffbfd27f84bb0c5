"""The Anthropic Messages API through the official ``anthropic`` SDK."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from himga.llm._client import SDKClient, check_roles
from himga.llm._errors import LLMConfigError, LLMError
from himga.llm._protocol import ChatMessage, Completion
from himga.llm._usage import reported_count

__all__ = ["AnthropicClient"]

_ROLES = frozenset({"system", "user", "assistant"})


class AnthropicClient(SDKClient):
    """Claude models over ``anthropic.Anthropic`` / ``anthropic.AsyncAnthropic``.

    Leading ``{"role": "system"}`` messages become the request's ``system``
    parameter (joined by blank lines), since the Messages API accepts only
    ``user``/``assistant`` turns; a system message after a turn is a ValueError.
    Every request sends ``max_tokens`` (the API requires it). No sampling
    parameter is sent: from API version ``2026-10-21`` (the default of anthropic
    SDK >= 2) ``temperature``, ``top_p`` and ``top_k`` are rejected, so
    ``temperature`` must be ``None``.
    """

    provider: ClassVar[str] = "anthropic"
    _sdk: ClassVar[str] = "anthropic"
    _sdk_classes: ClassVar[tuple[str, str]] = ("Anthropic", "AsyncAnthropic")
    _default_base_url: ClassVar[str] = "https://api.anthropic.com"

    def _check_temperature(self, temperature: float | None) -> None:
        if temperature is not None:
            raise LLMConfigError(
                f"temperature={temperature!r}: the Anthropic Messages API (version 2026-10-21, "
                "anthropic SDK >= 2) rejects sampling parameters; pass temperature=None"
            )

    def _request(self, messages: Sequence[ChatMessage], max_tokens: int) -> dict[str, Any]:
        check_roles(messages, _ROLES)
        n_system = 0
        while n_system < len(messages) and messages[n_system]["role"] == "system":
            n_system += 1
        turns = messages[n_system:]
        for i, message in enumerate(turns, start=n_system):
            if message["role"] == "system":
                raise ValueError(
                    f"messages[{i}]: a system message must come before every user/assistant "
                    "message (Anthropic takes the system prompt as a separate parameter)"
                )
        if not turns:
            raise ValueError("messages hold no user/assistant message")
        request: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": [{"role": m["role"], "content": m["content"]} for m in turns],
        }
        if n_system:
            request["system"] = "\n\n".join(m["content"] for m in messages[:n_system])
        return request

    def _send(self, sdk: Any, request: dict[str, Any]) -> Any:
        return sdk.messages.create(**request)

    async def _asend(self, sdk: Any, request: dict[str, Any]) -> Any:
        return await sdk.messages.create(**request)

    def _parse(self, reply: Any) -> Completion:
        texts = [block.text for block in reply.content if block.type == "text"]
        if not texts and reply.stop_reason != "max_tokens":
            raise LLMError(
                f"anthropic reply from model {self._model!r} holds no text "
                f"(stop_reason={reply.stop_reason!r})",
                provider=self.provider,
                model=self._model,
                status_code=None,
            )
        # Anthropic-compatible gateways may send null counts: the answer is kept, unmetered.
        prompt = completion = None
        if reply.usage is not None:
            prompt = reported_count(reply.usage.input_tokens)
            completion = reported_count(reply.usage.output_tokens)
        return Completion(
            text="".join(texts),
            input_tokens=prompt or 0,
            output_tokens=completion or 0,
            model=reply.model,
            metered=prompt is not None and completion is not None,
        )

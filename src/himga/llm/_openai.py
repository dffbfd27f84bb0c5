"""OpenAI Chat Completions (and compatible servers) through the official ``openai`` SDK."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

from himga.llm._client import SDKClient, check_roles, public_url
from himga.llm._errors import LLMConfigError, LLMError
from himga.llm._protocol import ChatMessage, Completion
from himga.llm._usage import reported_count

__all__ = ["OpenAIClient"]

_log = logging.getLogger("himga.llm")
_ROLES = frozenset({"system", "developer", "user", "assistant"})


class OpenAIClient(SDKClient):
    """Chat models over ``openai.OpenAI`` / ``openai.AsyncOpenAI``.

    Also serves any OpenAI-compatible server (vLLM, Ollama, llama.cpp) through
    ``base_url``. Messages are sent as given; every request sends ``max_tokens``,
    and ``temperature`` unless it is ``None`` (then the server's default applies).
    A server that reports no usage, or ``null`` token counts (gateways and local
    servers do), keeps its answer: the call counts 0 tokens, is counted in
    :attr:`~himga.llm.TokenUsage.unmetered_calls`, and logs a warning on the
    ``himga.llm`` logger.
    """

    provider: ClassVar[str] = "openai"
    _sdk: ClassVar[str] = "openai"
    _sdk_classes: ClassVar[tuple[str, str]] = ("OpenAI", "AsyncOpenAI")
    _default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def _check_temperature(self, temperature: float | None) -> None:
        if temperature is not None and not 0.0 <= temperature <= 2.0:
            raise LLMConfigError(f"temperature must be in [0, 2] or None, got {temperature!r}")

    def _request(self, messages: Sequence[ChatMessage], max_tokens: int) -> dict[str, Any]:
        check_roles(messages, _ROLES)
        request: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        return request

    def _send(self, sdk: Any, request: dict[str, Any]) -> Any:
        return sdk.chat.completions.create(**request)

    async def _asend(self, sdk: Any, request: dict[str, Any]) -> Any:
        return await sdk.chat.completions.create(**request)

    def _parse(self, reply: Any) -> Completion:
        choice = reply.choices[0] if reply.choices else None
        text = choice.message.content if choice is not None else None
        if text is None:
            reason = choice.finish_reason if choice is not None else "no choices"
            raise LLMError(
                f"openai reply from model {self._model!r} holds no text (finish_reason={reason!r})",
                provider=self.provider,
                model=self._model,
                status_code=None,
            )
        usage = reply.usage
        prompt = completion = None
        if usage is not None:
            prompt = reported_count(usage.prompt_tokens)
            completion = reported_count(usage.completion_tokens)
        if prompt is None or completion is None:
            _log.warning(
                "%s reported no token usage (%r); counting the call as unmetered",
                public_url(self.base_url),
                usage,
            )
        return Completion(
            text=text,
            input_tokens=prompt or 0,
            output_tokens=completion or 0,
            metered=prompt is not None and completion is not None,
            model=reply.model,
        )

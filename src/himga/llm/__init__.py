"""Language-model clients: one protocol, the Anthropic and OpenAI SDKs behind it.

``get_client()`` builds a client from arguments and the SDKs' usual environment
variables; see ``docs/llm.md``. :class:`FakeLLMServer` is a loopback server
speaking both APIs, for tests and offline runs (standard library only; loaded on
first use, so importing this package does not pay for ``http.server``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from himga._lazy import lazy_names
from himga.llm._anthropic import AnthropicClient
from himga.llm._cache import (
    CacheSchemaError,
    CacheStats,
    CachingClient,
    HasCacheStats,
    LLMCache,
    cache_key,
)
from himga.llm._client import SDKClient
from himga.llm._errors import LLMConfigError, LLMError, MissingAPIKeyError, UnknownProviderError
from himga.llm._factory import (
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODELS,
    DEFAULT_PROVIDER,
    DEFAULT_TEMPERATURES,
    DEFAULT_TIMEOUT,
    LOCAL_MAX_CONCURRENCY,
    PROVIDERS,
    get_client,
)
from himga.llm._gguf import LocalModelError
from himga.llm._local import LocalClient
from himga.llm._openai import OpenAIClient
from himga.llm._protocol import (
    CachingLLMClient,
    ChatMessage,
    Completion,
    HasBaseURL,
    HasMaxRetries,
    HasMaxTokens,
    HasTemperature,
    HasUsage,
    HasWeights,
    LLMClient,
)
from himga.llm._usage import TokenUsage

if TYPE_CHECKING:
    from himga.llm._fake_server import (
        FakeLLMServer,
        RecordedRequest,
        Responder,
        echo_responder,
        offline_responder,
    )
    from himga.llm._fake_wire import ChatRequest, Reply, Tool, ToolCall, word_count

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODELS",
    "DEFAULT_PROVIDER",
    "DEFAULT_TEMPERATURES",
    "DEFAULT_TIMEOUT",
    "LOCAL_MAX_CONCURRENCY",
    "PROVIDERS",
    "AnthropicClient",
    "CacheSchemaError",
    "CacheStats",
    "CachingClient",
    "CachingLLMClient",
    "ChatMessage",
    "ChatRequest",
    "Completion",
    "FakeLLMServer",
    "HasBaseURL",
    "HasCacheStats",
    "HasMaxRetries",
    "HasMaxTokens",
    "HasTemperature",
    "HasUsage",
    "HasWeights",
    "LLMCache",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LocalClient",
    "LocalModelError",
    "MissingAPIKeyError",
    "OpenAIClient",
    "RecordedRequest",
    "Reply",
    "Responder",
    "SDKClient",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "UnknownProviderError",
    "cache_key",
    "echo_responder",
    "get_client",
    "offline_responder",
    "word_count",
]

# The fake server's names, and the private module that defines each.
_FAKE_SERVER = {
    "FakeLLMServer": "_fake_server",
    "RecordedRequest": "_fake_server",
    "Responder": "_fake_server",
    "echo_responder": "_fake_server",
    "offline_responder": "_fake_server",
    "ChatRequest": "_fake_wire",
    "Reply": "_fake_wire",
    "Tool": "_fake_wire",
    "ToolCall": "_fake_wire",
    "word_count": "_fake_wire",
}


__getattr__, __dir__ = lazy_names(__name__, _FAKE_SERVER, globals())

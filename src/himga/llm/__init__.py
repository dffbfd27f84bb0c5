"""Language-model clients: one protocol, the Anthropic and OpenAI SDKs behind it.

``get_client()`` builds a client from arguments and the SDKs' usual environment
variables; see ``docs/llm.md``.
"""

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
    PROVIDERS,
    get_client,
)
from himga.llm._openai import OpenAIClient
from himga.llm._protocol import (
    ChatMessage,
    Completion,
    HasBaseURL,
    HasMaxRetries,
    HasTemperature,
    HasUsage,
    LLMClient,
)
from himga.llm._usage import TokenUsage

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODELS",
    "DEFAULT_PROVIDER",
    "DEFAULT_TEMPERATURES",
    "DEFAULT_TIMEOUT",
    "PROVIDERS",
    "AnthropicClient",
    "CacheSchemaError",
    "CacheStats",
    "CachingClient",
    "ChatMessage",
    "Completion",
    "HasBaseURL",
    "HasCacheStats",
    "HasMaxRetries",
    "HasTemperature",
    "HasUsage",
    "LLMCache",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "MissingAPIKeyError",
    "OpenAIClient",
    "SDKClient",
    "TokenUsage",
    "UnknownProviderError",
    "cache_key",
    "get_client",
]

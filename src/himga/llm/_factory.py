"""``get_client``: a provider's client configured from arguments and the usual environment."""

from __future__ import annotations

import enum
import os
from typing import Final

from himga.llm._anthropic import AnthropicClient
from himga.llm._cache import LLMCache
from himga.llm._client import SDKClient
from himga.llm._errors import MissingAPIKeyError, UnknownProviderError
from himga.llm._openai import OpenAIClient

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODELS",
    "DEFAULT_PROVIDER",
    "DEFAULT_TEMPERATURES",
    "DEFAULT_TIMEOUT",
    "PROVIDERS",
    "get_client",
]

PROVIDERS: Final = ("anthropic", "openai")
DEFAULT_PROVIDER: Final = "anthropic"
#: Small, cheap models, so a full LoCoMo run (about 4,000 calls with the judge) stays affordable.
DEFAULT_MODELS: Final = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}
DEFAULT_MAX_CONCURRENCY: Final = 32
DEFAULT_MAX_RETRIES: Final = 5
DEFAULT_TIMEOUT: Final = 120.0
DEFAULT_MAX_TOKENS: Final = 1024

#: Sampling temperature when none is given: 0 where the API accepts one (OpenAI and
#: compatible servers); Anthropic's current API rejects sampling parameters.
DEFAULT_TEMPERATURES: Final[dict[str, float | None]] = {"anthropic": None, "openai": 0.0}


class _Default(enum.Enum):
    """Marks an argument left out, where ``None`` is itself a meaningful value."""

    TOKEN = enum.auto()


_DEFAULT: Final = _Default.TOKEN

_CLIENTS: Final[dict[str, type[SDKClient]]] = {
    "anthropic": AnthropicClient,
    "openai": OpenAIClient,
}


def _env(name: str) -> str | None:
    """The environment variable ``name``, with an empty value meaning unset."""
    return os.environ.get(name) or None


def get_client(
    provider: str | None = None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
    temperature: float | _Default | None = _DEFAULT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    cache: str | os.PathLike[str] | LLMCache | None = None,
) -> SDKClient:
    """A client for ``provider`` (``"anthropic"`` or ``"openai"``).

    Each setting comes from its argument, else the environment, else a default:

    - provider: ``$LLM_PROVIDER``, else ``"anthropic"``;
    - model: ``$HIMGA_MODEL``, else :data:`DEFAULT_MODELS` for the provider;
    - api_key: ``$ANTHROPIC_API_KEY`` / ``$OPENAI_API_KEY``, else :class:`MissingAPIKeyError`;
    - base_url: ``$ANTHROPIC_BASE_URL`` / ``$OPENAI_BASE_URL``, else the SDK's endpoint;
    - temperature: :data:`DEFAULT_TEMPERATURES` (0 for OpenAI; not sent to Anthropic,
      whose API rejects it; ``None`` means "send none").

    ``max_retries`` and ``timeout`` (seconds per attempt) go to the SDK, which
    retries 408/409/429/5xx and connection errors with backoff; ``max_tokens`` is
    the default reply budget of each call. The SDK is imported here, so a missing
    extra raises :class:`~himga._extras.MissingExtraError` now, not at the first call.

    ``cache`` (a SQLite file path, or an :class:`~himga.llm.LLMCache`) answers a
    request asked before from the file instead of the model; off by default.
    """
    name = provider if provider is not None else (_env("LLM_PROVIDER") or DEFAULT_PROVIDER)
    key = name.strip().lower()
    if key not in _CLIENTS:
        source = "provider argument" if provider is not None else "LLM_PROVIDER"
        raise UnknownProviderError(
            f"unknown LLM provider {name!r} (from {source}); choose one of {', '.join(PROVIDERS)}"
        )
    prefix = key.upper()
    resolved_key = api_key if api_key is not None else _env(f"{prefix}_API_KEY")
    if not resolved_key:
        raise MissingAPIKeyError(
            f"no API key for the {key} client: set {prefix}_API_KEY or pass api_key= "
            "(a local OpenAI-compatible server accepts any non-empty value)"
        )
    return _CLIENTS[key](
        api_key=resolved_key,
        model=model or _env("HIMGA_MODEL") or DEFAULT_MODELS[key],
        base_url=base_url if base_url is not None else _env(f"{prefix}_BASE_URL"),
        max_concurrency=max_concurrency,
        max_retries=max_retries,
        timeout=timeout,
        temperature=DEFAULT_TEMPERATURES[key] if temperature is _DEFAULT else temperature,
        max_tokens=max_tokens,
        cache=cache,
    )

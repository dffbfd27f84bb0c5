"""``get_client``: a provider's client configured from arguments and the usual environment."""

from __future__ import annotations

import enum
import os
from typing import Final

from himga.llm._anthropic import AnthropicClient
from himga.llm._cache import LLMCache
from himga.llm._client import SDKClient
from himga.llm._errors import LLMConfigError, MissingAPIKeyError, UnknownProviderError
from himga.llm._local import DEFAULT_CONTEXT, DEFAULT_SEED, DEFAULT_THREADS, LocalClient
from himga.llm._openai import OpenAIClient

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODELS",
    "DEFAULT_PROVIDER",
    "DEFAULT_TEMPERATURES",
    "DEFAULT_TIMEOUT",
    "LOCAL_MAX_CONCURRENCY",
    "LOCAL_TIMEOUT",
    "PROVIDERS",
    "get_client",
]

PROVIDERS: Final = ("anthropic", "openai", "local")
DEFAULT_PROVIDER: Final = "anthropic"
#: Small, cheap models, so a full LoCoMo run (about 4,000 calls with the judge) stays affordable.
#: The local provider has none: its model is the GGUF file the user brings.
DEFAULT_MODELS: Final = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}
DEFAULT_MAX_CONCURRENCY: Final = 32
#: In-flight calls of a local model: its server computes one reply at a time, so more
#: would only wait in its queue, towards their timeouts.
LOCAL_MAX_CONCURRENCY: Final = 1
DEFAULT_MAX_RETRIES: Final = 5
DEFAULT_TIMEOUT: Final = 120.0
#: Seconds per attempt of a local model's call: its server computes one reply at a time
#: on the machine's own cores, so a long prompt under load takes minutes, and a client
#: that gave up would only make it compute the same reply again (measured: a 3,000-token
#: prompt on one loaded core took over 120 s, docs/answers.md).
LOCAL_TIMEOUT: Final = 1800.0
DEFAULT_MAX_TOKENS: Final = 1024

#: Sampling temperature when none is given: 0 where the API accepts one (OpenAI and
#: compatible servers); Anthropic's current API rejects sampling parameters.
DEFAULT_TEMPERATURES: Final[dict[str, float | None]] = {
    "anthropic": None,
    "openai": 0.0,
    "local": 0.0,
}


class _Default(enum.Enum):
    """Marks an argument left out, where ``None`` is itself a meaningful value."""

    TOKEN = enum.auto()


_DEFAULT: Final = _Default.TOKEN

_CLIENTS: Final[dict[str, type[SDKClient]]] = {
    "anthropic": AnthropicClient,
    "openai": OpenAIClient,
    "local": LocalClient,
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
    max_concurrency: int | _Default = _DEFAULT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: float | _Default = _DEFAULT,
    temperature: float | _Default | None = _DEFAULT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    cache: str | os.PathLike[str] | LLMCache | None = None,
    threads: int | None = None,
    context: int | None = None,
    seed: int | None = None,
) -> SDKClient:
    """A client for ``provider`` (``"anthropic"``, ``"openai"`` or ``"local"``).

    Each setting comes from its argument, else the environment, else a default:

    - provider: ``$LLM_PROVIDER``, else ``"anthropic"``;
    - model: ``$HIMGA_MODEL``, else :data:`DEFAULT_MODELS` for the provider;
    - api_key: ``$ANTHROPIC_API_KEY`` / ``$OPENAI_API_KEY``, else :class:`MissingAPIKeyError`;
    - base_url: ``$ANTHROPIC_BASE_URL`` / ``$OPENAI_BASE_URL``, else the SDK's endpoint;
    - temperature: :data:`DEFAULT_TEMPERATURES` (0 for OpenAI; not sent to Anthropic,
      whose API rejects it; ``None`` means "send none").

    ``max_retries`` and ``timeout`` (seconds per attempt; :data:`DEFAULT_TIMEOUT`, or
    :data:`LOCAL_TIMEOUT` for the local provider) go to the SDK, which
    retries 408/409/429/5xx and connection errors with backoff; ``max_tokens`` is
    the default reply budget of each call. The SDK is imported here, so a missing
    extra raises :class:`~himga._extras.MissingExtraError` now, not at the first call.

    ``cache`` (a SQLite file path, or an :class:`~himga.llm.LLMCache`) answers a
    request asked before from the file instead of the model; off by default.
    ``max_concurrency`` defaults to :data:`DEFAULT_MAX_CONCURRENCY`
    (:data:`LOCAL_MAX_CONCURRENCY` for a local model).

    ``"local"`` serves the GGUF file ``model`` (required: the argument or
    ``$HIMGA_MODEL``) on loopback (:class:`~himga.llm.LocalClient`): no key, no
    network; ``base_url`` only if given (the ``OPENAI_*`` variables do not apply);
    ``threads`` (default 1), ``context`` (tokens, default 4096) and ``seed``
    (default 0) configure its server, and are refused for the other providers.
    """
    name = provider if provider is not None else (_env("LLM_PROVIDER") or DEFAULT_PROVIDER)
    key = name.strip().lower()
    if key not in _CLIENTS:
        source = "provider argument" if provider is not None else "LLM_PROVIDER"
        raise UnknownProviderError(
            f"unknown LLM provider {name!r} (from {source}); choose one of {', '.join(PROVIDERS)}"
        )
    resolved_model = model or _env("HIMGA_MODEL")
    resolved_temperature = DEFAULT_TEMPERATURES[key] if temperature is _DEFAULT else temperature
    if key == "local":
        if not resolved_model:
            raise LLMConfigError(
                "the local provider needs the path of a GGUF file as the model "
                "(--model PATH.gguf, model= or HIMGA_MODEL)"
            )
        for name, value in (("threads", threads), ("context", context)):
            if value is not None and value < 1:
                raise LLMConfigError(f"{name} must be >= 1, got {value!r}")
        return LocalClient(
            model=resolved_model,
            base_url=base_url,
            threads=DEFAULT_THREADS if threads is None else threads,
            context=DEFAULT_CONTEXT if context is None else context,
            seed=DEFAULT_SEED if seed is None else seed,
            max_concurrency=LOCAL_MAX_CONCURRENCY
            if max_concurrency is _DEFAULT
            else max_concurrency,
            max_retries=max_retries,
            timeout=LOCAL_TIMEOUT if timeout is _DEFAULT else timeout,
            temperature=resolved_temperature,
            max_tokens=max_tokens,
            cache=cache,
        )
    local_only = {"threads": threads, "context": context, "seed": seed}
    given = [name for name, value in local_only.items() if value is not None]
    if given:
        raise LLMConfigError(f"{', '.join(given)}: settings of the local provider, not {key}")
    prefix = key.upper()
    resolved_key = api_key if api_key is not None else _env(f"{prefix}_API_KEY")
    if not resolved_key:
        raise MissingAPIKeyError(
            f"no API key for the {key} client: set {prefix}_API_KEY or pass api_key= "
            "(a local OpenAI-compatible server accepts any non-empty value)"
        )
    return _CLIENTS[key](
        api_key=resolved_key,
        model=resolved_model or DEFAULT_MODELS[key],
        base_url=base_url if base_url is not None else _env(f"{prefix}_BASE_URL"),
        max_concurrency=DEFAULT_MAX_CONCURRENCY if max_concurrency is _DEFAULT else max_concurrency,
        max_retries=max_retries,
        timeout=DEFAULT_TIMEOUT if timeout is _DEFAULT else timeout,
        temperature=resolved_temperature,
        max_tokens=max_tokens,
        cache=cache,
    )

"""The interface the agent and the judge use to talk to a language model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

from himga.llm._usage import TokenUsage

__all__ = [
    "CachingLLMClient",
    "ChatMessage",
    "Completion",
    "HasBaseURL",
    "HasMaxRetries",
    "HasTemperature",
    "HasUsage",
    "HasWeights",
    "LLMClient",
]


class ChatMessage(TypedDict):
    """An OpenAI-style chat message: ``{"role": "user", "content": "..."}``."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Completion:
    """The text of one model reply and the tokens that call used; ``metered`` is false when
    the server reported no token counts (both are then 0, not the tokens used)."""

    text: str
    input_tokens: int
    output_tokens: int
    model: str
    metered: bool = True


@runtime_checkable
class LLMClient(Protocol):
    """A chat model. ``chat`` for one call; ``achat`` for concurrent use.

    ``achat`` calls may run concurrently from one event loop; implementations
    bound them by ``max_concurrency`` and retry transient failures (429, 5xx,
    timeouts) themselves, raising only when retries are exhausted.
    """

    @property
    def provider(self) -> str:
        """The provider name given to :func:`get_client` (``"anthropic"``, ``"openai"``)."""
        ...

    @property
    def model(self) -> str:
        """The model every call uses."""
        ...

    @property
    def max_concurrency(self) -> int:
        """How many ``achat`` calls may be in flight at once."""
        ...

    def chat(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> str:
        """The reply text to ``messages`` (blocking)."""
        ...

    async def achat(
        self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None
    ) -> Completion:
        """The reply to ``messages`` with its token usage."""
        ...


@runtime_checkable
class CachingLLMClient(LLMClient, Protocol):
    """An :class:`LLMClient` that may answer from a cache of earlier replies.

    A caller that finds a reply unusable (a judge reply naming no verdict) calls
    ``forget`` with the same request, so the unusable reply is not served again
    and a later identical request reaches the model. Without a cache it does nothing.
    """

    def forget(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> None:
        """Drop the stored reply to this request, if there is one."""
        ...


# Optional capabilities of a client: what a run records about it when it has them
# (``isinstance(client, HasTemperature)``), declared rather than probed by name.


@runtime_checkable
class HasTemperature(Protocol):
    """A client that samples at a set ``temperature`` (``None``: the provider's default)."""

    @property
    def temperature(self) -> float | None:
        """The sampling temperature of every call."""
        ...


@runtime_checkable
class HasMaxTokens(Protocol):
    """A client with a default reply budget, used when a call gives no ``max_tokens``."""

    @property
    def max_tokens(self) -> int:
        """The default reply budget in tokens."""
        ...


@runtime_checkable
class HasBaseURL(Protocol):
    """A client that calls an HTTP endpoint (credentials may be in it: record
    :func:`~himga.llm._client.public_url` of it, never the URL itself)."""

    @property
    def base_url(self) -> str:
        """The endpoint's base URL."""
        ...


@runtime_checkable
class HasMaxRetries(Protocol):
    """A client that retries a failed call up to ``max_retries`` times."""

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt."""
        ...


@runtime_checkable
class HasUsage(Protocol):
    """A client that counts its calls and tokens."""

    @property
    def usage(self) -> TokenUsage:
        """Calls and tokens so far."""
        ...


@runtime_checkable
class HasWeights(Protocol):
    """A client of a model whose weights are a file on this machine (the ``local``
    provider): what names them, recorded in the run identity and the manifest."""

    @property
    def weights(self) -> Mapping[str, Any]:
        """Plain JSON data: the file's ``sha256``, the ``runtime`` and its
        ``runtime_version``, and the settings that change a reply."""
        ...

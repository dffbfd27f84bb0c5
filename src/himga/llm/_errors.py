"""What can go wrong when configuring or calling a language model."""

from __future__ import annotations

from himga._errors import HimgaError

__all__ = ["LLMConfigError", "LLMError", "MissingAPIKeyError", "UnknownProviderError"]


class LLMConfigError(HimgaError, ValueError):
    """A client cannot be built from the given arguments and environment."""


class UnknownProviderError(LLMConfigError):
    """The provider name is not one :func:`himga.llm.get_client` knows."""


class MissingAPIKeyError(LLMConfigError):
    """No API key was passed and the provider's environment variable is unset."""


class LLMError(HimgaError):
    """A model call failed for good: not retryable, or still failing after every retry.

    The SDK exception is chained as ``__cause__``; the message never contains the
    API key. ``status_code`` is the last HTTP status, or ``None`` when no response
    arrived (connection error, timeout).
    """

    def __init__(self, message: str, *, provider: str, model: str, status_code: int | None) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status_code = status_code

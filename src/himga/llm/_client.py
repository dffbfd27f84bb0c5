"""What every SDK-backed client shares: per-event-loop state, the concurrency bound, usage, errors.

A subclass names the SDK's client classes and says how to turn chat messages
into a request and a reply into a :class:`Completion`; retries are left to the SDK
(``max_retries``), which backs off on 408/409/429/5xx (Anthropic's 529 included)
and connection errors, honouring ``retry-after-ms`` / ``retry-after``.

The SDKs' ``timeout`` limits each wait for the network, not an attempt: a server
that sends a byte now and then is never cut off, and ``retry-after`` can ask for
long waits. So every call also has a total deadline, :attr:`SDKClient.deadline`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from himga._extras import require
from himga._json import LONE_SURROGATE
from himga.llm._cache import CacheStats, LLMCache, as_cache, cache_key
from himga.llm._errors import LLMConfigError, LLMError
from himga.llm._protocol import ChatMessage, Completion
from himga.llm._usage import TokenUsage, UsageCounter

__all__ = ["SDKClient", "check_roles", "public_url", "sendable"]

# Both SDKs wait 0.5 s before the first retry, doubling up to 8 s (minus jitter),
# unless the server asks for another wait: the deadline allows the former only.
_FIRST_BACKOFF = 0.5
_LAST_BACKOFF = 8.0
# Room for what is not waiting on the network (building the request, parsing).
_DEADLINE_MARGIN = 1.0


@dataclass(frozen=True, slots=True)
class _LoopState:
    """Objects bound to one event loop: they must not be shared with another loop."""

    semaphore: asyncio.Semaphore
    sdk: Any
    closer: AsyncGenerator[None, None]


class SDKClient(ABC):
    """An :class:`~himga.llm.LLMClient` over an official provider SDK.

    ``achat`` may be awaited from any number of event loops over the client's
    life (``asyncio.run`` twice, say): each loop gets its own semaphore of
    ``max_concurrency`` permits and its own async SDK client. ``chat`` uses one
    blocking SDK client shared by all threads. Every call adds to :attr:`usage`.

    Every call, retries and their waits included, ends within :attr:`deadline`
    (``timeout`` per attempt it may make, plus the back-off between them) or
    raises :class:`LLMError`, whatever the server does: never answer, drip bytes,
    or ask for long ``retry-after`` waits.

    With ``cache`` (a path or an :class:`~himga.llm.LLMCache`) a request asked
    before -- same provider, model, temperature, reply budget and messages -- is
    answered from the cache without a call (and without adding to :attr:`usage`);
    every reply received is stored.
    """

    provider: ClassVar[str]
    #: The SDK module, also the name of the extra that installs it.
    _sdk: ClassVar[str]
    #: The SDK module's blocking and async client classes, by name.
    _sdk_classes: ClassVar[tuple[str, str]]
    #: The SDK's endpoint when no base URL is configured.
    _default_base_url: ClassVar[str]

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None,
        max_concurrency: int,
        max_retries: int,
        timeout: float,
        temperature: float | None,
        max_tokens: int,
        cache: str | os.PathLike[str] | LLMCache | None = None,
    ) -> None:
        if not api_key:
            raise LLMConfigError("api_key must be a non-empty string")
        if not model:
            raise LLMConfigError("model must be a non-empty string")
        if max_concurrency < 1:
            raise LLMConfigError(f"max_concurrency must be >= 1, got {max_concurrency!r}")
        if max_retries < 0:
            raise LLMConfigError(f"max_retries must be >= 0, got {max_retries!r}")
        if timeout <= 0:
            raise LLMConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
        if max_tokens < 1:
            raise LLMConfigError(f"max_tokens must be >= 1, got {max_tokens!r}")
        self._check_temperature(temperature)
        self._sdk_module = self._import_sdk()
        # The SDK's base exception for failed requests (``anthropic.APIError``, ...).
        self._sdk_error: type[Exception] = self._sdk_module.APIError
        self._api_key = api_key
        self._model = model
        self._base_url = base_url
        self._max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._usage = UsageCounter()
        self._lock = threading.Lock()
        self._sync_sdk: Any = None
        self._loops: dict[asyncio.AbstractEventLoop, _LoopState] = {}
        self.cache = None if cache is None else as_cache(cache)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self._model!r}, base_url={public_url(self.base_url)!r}, "
            f"max_concurrency={self._max_concurrency}, max_retries={self.max_retries})"
        )

    @property
    def model(self) -> str:
        """The model every call uses."""
        return self._model

    @property
    def max_concurrency(self) -> int:
        """How many ``achat`` calls of one event loop may be in flight at once."""
        return self._max_concurrency

    @property
    def base_url(self) -> str:
        """The endpoint requests go to."""
        return self._base_url if self._base_url is not None else self._default_base_url

    @property
    def deadline(self) -> float:
        """Seconds a call may take in all: ``timeout`` for each of its ``max_retries + 1``
        attempts, the SDKs' longest back-off before each retry (0.5 s, doubling, at
        most 8 s) and 1 s of margin: 736.5 s with the defaults."""
        backoff = sum(min(_FIRST_BACKOFF * 2.0**i, _LAST_BACKOFF) for i in range(self.max_retries))
        return self.timeout * (self.max_retries + 1) + backoff + _DEADLINE_MARGIN

    @property
    def usage(self) -> TokenUsage:
        """Calls and tokens so far, over ``chat`` and ``achat`` together."""
        return self._usage.snapshot()

    @property
    def cache_stats(self) -> CacheStats | None:
        """Cache hits and misses of this client so far; ``None`` without a cache."""
        return None if self.cache is None else self.cache.stats

    # -- the two ways to call ----------------------------------------------------------

    def chat(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> str:
        """The reply text to ``messages``, blocking; raises :class:`LLMError` after retries."""
        budget = self._max_tokens(max_tokens)
        request = self._request(sendable(messages), budget)
        key = self._cache_key(messages, budget)
        if key is not None and (hit := self._cached(key)) is not None:
            return hit.text
        with self._lock:
            if self._sync_sdk is None:
                self._sync_sdk = self._new_sdk(asynchronous=False)
            sdk = self._sync_sdk
        deadline = self.deadline
        try:
            reply = _within(deadline, lambda: self._send(sdk, request))
        except self._sdk_error as exc:
            self._usage.add_failure()
            raise self._failure(exc) from exc
        except TimeoutError as exc:
            self._usage.add_failure()
            raise self._overdue(deadline) from exc
        return self._completed(reply, key).text

    async def achat(
        self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None
    ) -> Completion:
        """The reply to ``messages`` with its usage; at most ``max_concurrency`` run at once."""
        budget = self._max_tokens(max_tokens)
        request = self._request(sendable(messages), budget)
        key = self._cache_key(messages, budget)
        if key is not None and (hit := self._cached(key)) is not None:
            return hit
        state = await self._loop_state()
        async with state.semaphore:
            deadline = self.deadline
            try:
                # Cancelling the SDK call at the deadline closes its connection.
                reply = await asyncio.wait_for(self._asend(state.sdk, request), deadline)
            except self._sdk_error as exc:
                self._usage.add_failure()
                raise self._failure(exc) from exc
            except asyncio.TimeoutError as exc:  # TimeoutError's alias from Python 3.11 on
                self._usage.add_failure()
                raise self._overdue(deadline) from exc
        return self._completed(reply, key)

    def forget(self, messages: Sequence[ChatMessage], /, *, max_tokens: int | None = None) -> None:
        """Drop the cached reply to this request (if any): the next identical one is sent.

        For a reply the caller found unusable, e.g. a judge reply naming no verdict:
        cached, it would be served again on every re-run. Without a cache, nothing.
        """
        key = self._cache_key(messages, self._max_tokens(max_tokens))
        if key is not None and self.cache is not None:
            self.cache.discard(key)

    def close(self) -> None:
        """Close the blocking SDK client (a later ``chat`` opens a new one)."""
        with self._lock:
            sdk, self._sync_sdk = self._sync_sdk, None
        if sdk is not None:
            sdk.close()

    async def aclose(self) -> None:
        """Close the async SDK client of the running event loop (a later ``achat`` opens one)."""
        with self._lock:
            state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.closer.aclose()

    # -- helpers -----------------------------------------------------------------------

    def _max_tokens(self, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self.max_tokens
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        return max_tokens

    def _new_sdk(self, *, asynchronous: bool) -> Any:
        """A new SDK client (async or blocking) with this client's key, URL, retries, timeout."""
        blocking, non_blocking = self._sdk_classes
        cls = getattr(self._sdk_module, non_blocking if asynchronous else blocking)
        options: dict[str, Any] = {}
        if self._base_url is not None:
            options["base_url"] = self._base_url
        return cls(
            api_key=self._api_key, max_retries=self.max_retries, timeout=self.timeout, **options
        )

    async def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._loops.get(loop)
            if state is not None:
                return state
            # Loops closed without finalising their async generators (no asyncio.run)
            # leave their state behind; it cannot be used again.
            for closed in [other for other in self._loops if other.is_closed()]:
                del self._loops[closed]
            sdk = self._new_sdk(asynchronous=True)
            closer = self._close_at_shutdown(loop, sdk)
            state = _LoopState(asyncio.Semaphore(self._max_concurrency), sdk, closer)
            self._loops[loop] = state
        # Started inside the loop, the generator is registered with it, so the loop's
        # shutdown_asyncgens() (which asyncio.run calls) closes the SDK client there,
        # instead of leaving its sockets to the garbage collector of a closed loop.
        await anext(closer)
        return state

    async def _close_at_shutdown(
        self, loop: asyncio.AbstractEventLoop, sdk: Any
    ) -> AsyncGenerator[None, None]:
        """Wait until ``loop`` finalises this generator, then forget its state and close ``sdk``."""
        try:
            yield
        finally:
            with self._lock:
                if loop in self._loops and self._loops[loop].sdk is sdk:
                    del self._loops[loop]
            await sdk.close()

    def _cache_key(self, messages: Sequence[ChatMessage], max_tokens: int) -> str | None:
        if self.cache is None:
            return None
        return cache_key(self.provider, self._model, self._cache_settings(max_tokens), messages)

    def _cache_settings(self, max_tokens: int) -> dict[str, Any]:
        """What, besides provider, model and messages, changes a reply (the cache key's
        settings); a subclass adds its own."""
        return {"max_tokens": max_tokens, "temperature": self.temperature}

    def _cached(self, key: str) -> Completion | None:
        assert self.cache is not None
        return self.cache.get(key)

    def _completed(self, reply: Any, key: str | None) -> Completion:
        try:
            completion = self._parse(reply)
        except LLMError:
            self._usage.add_failure()
            raise
        self._usage.add_call(
            completion.input_tokens, completion.output_tokens, metered=completion.metered
        )
        if key is not None and self.cache is not None:
            # What the file keeps (redacted), so a reply now is the reply a hit gives later.
            return self.cache.put(key, completion)
        return completion

    def _failure(self, exc: Exception) -> LLMError:
        status = getattr(exc, "status_code", None)
        detail = str(exc).replace(self._api_key, "***")
        what = f"HTTP {status}" if isinstance(status, int) else type(exc).__name__
        return LLMError(
            f"{self.provider} call to model {self._model!r} at {public_url(self.base_url)} failed "
            f"(max_retries={self.max_retries}): {what}: {detail}",
            provider=self.provider,
            model=self._model,
            status_code=status if isinstance(status, int) else None,
        )

    def _overdue(self, deadline: float) -> LLMError:
        return LLMError(
            f"{self.provider} call to model {self._model!r} at {public_url(self.base_url)} failed: "
            f"no complete reply within its deadline of {deadline:g} s (timeout={self.timeout:g} s "
            f"per attempt, max_retries={self.max_retries})",
            provider=self.provider,
            model=self._model,
            status_code=None,
        )

    # -- provider specifics ---------------------------------------------------------------

    @abstractmethod
    def _check_temperature(self, temperature: float | None) -> None:
        """Raise LLMConfigError if the provider cannot take ``temperature``."""

    def _import_sdk(self) -> Any:
        """The SDK module, through :func:`himga._extras.require` (its error names the extra)."""
        return require(self._sdk, extra=self._sdk, purpose=f"The {self._sdk_classes[0]} client")

    @abstractmethod
    def _request(self, messages: Sequence[ChatMessage], max_tokens: int) -> dict[str, Any]:
        """The SDK ``create`` keyword arguments for ``messages``; ValueError if they are invalid."""

    @abstractmethod
    def _send(self, sdk: Any, request: dict[str, Any]) -> Any:
        """Perform ``request`` with a blocking SDK client."""

    @abstractmethod
    async def _asend(self, sdk: Any, request: dict[str, Any]) -> Any:
        """Perform ``request`` with an async SDK client."""

    @abstractmethod
    def _parse(self, reply: Any) -> Completion:
        """The :class:`Completion` in an SDK reply; LLMError if it holds no text."""


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result or exception, or :class:`TimeoutError` after ``seconds``.

    A blocking SDK call cannot be interrupted, so it runs in a daemon thread that
    is left behind at the deadline: it ends when the server answers or closes
    (its reply is dropped), and never keeps the process alive.
    """
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the caller's thread, re-raised there
            failure.append(exc)

    worker = threading.Thread(target=run, name="himga-llm-call", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no reply after {time.monotonic() - started:.3g} s")
    if failure:
        raise failure[0]
    return outcome[0]


def sendable(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with each lone surrogate (from a dataset, or a reply echoed into a
    judge's prompt) replaced by U+FFFD: no API can be sent one (it is not UTF-8), and
    the call would fail for ever rather than be answered."""
    return [
        ChatMessage(role=message["role"], content=LONE_SURROGATE.sub("\ufffd", message["content"]))
        for message in messages
    ]


def check_roles(messages: Sequence[ChatMessage], allowed: frozenset[str]) -> None:
    """Raise ValueError naming the first message whose role is not in ``allowed``."""
    if not messages:
        raise ValueError("messages must not be empty")
    for i, message in enumerate(messages):
        if message["role"] not in allowed:
            raise ValueError(
                f"messages[{i}]: role {message['role']!r} is not one of {sorted(allowed)}"
            )


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment, which may hold credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))

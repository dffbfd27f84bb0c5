"""The recording proxies of one evaluation process, and the phase windows opened on them.

``himga eval`` keeps one :class:`RunMeter` in the process that runs it, writing
each call to the run's ``calls.jsonl``; each Ray worker keeps one of its own,
collecting its calls in memory for the driver (:class:`~himga.eval.RayExecutor`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack

from himga.llm._client import public_url
from himga.metering._proxy import ProxyCall, RecordingProxy

__all__ = ["RunMeter"]


class RunMeter:
    """The recording proxies of one evaluation process, closed with it; each call they
    record is passed to ``on_call`` (on the proxy's thread serving it).

    :meth:`route` sends a memory's own endpoint through a proxy (one per upstream,
    started on first use); :meth:`memory_upstream`, :meth:`answer_upstream` and
    :meth:`judge_upstream` give the URL a client should call instead of an upstream,
    for the memory's client, the answering one and a judge apart from it (which
    shares the answerer's proxy when it calls the same upstream). :meth:`phase` is
    the memory's window (a :class:`~himga.eval.PhaseMeter`), :meth:`answer_phase`
    the answering and judging clients'.
    """

    def __init__(self, on_call: Callable[[ProxyCall], None]) -> None:
        self._on_call = on_call
        self._lock = threading.RLock()
        self._stack = ExitStack()
        self._memory: dict[str, RecordingProxy] = {}
        # The answering and judging clients' proxies, one per upstream.
        self._answer: dict[str, RecordingProxy] = {}
        self._answer_upstream: str | None = None
        self._judge_upstream: str | None = None
        # The memory's open window, which a proxy started inside it joins.
        self._window: tuple[str, ExitStack] | None = None

    def __enter__(self) -> RunMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _proxy(self, pool: dict[str, RecordingProxy], upstream: str) -> RecordingProxy:
        """The proxy of ``upstream`` in ``pool``, started (and added) on first use."""
        with self._lock:
            if upstream not in pool:
                pool[upstream] = self._stack.enter_context(
                    RecordingProxy(upstream, on_call=self._on_call)
                )
                if pool is self._memory and self._window is not None:
                    name, window = self._window
                    window.enter_context(pool[upstream].phase(name))
            return pool[upstream]

    def memory_upstream(self, upstream: str) -> str:
        """The URL the memory's client calls instead of ``upstream``."""
        return self._proxy(self._memory, upstream).url

    def route(self, memory: object) -> None:
        """Route ``memory``'s endpoint through a proxy if it is an
        :class:`~himga.memory.EndpointUser` with one; otherwise leave it as it is."""
        from himga.memory import EndpointUser

        if isinstance(memory, EndpointUser):
            upstream = memory.llm_endpoint
            if upstream is not None:
                memory.route_llm(self.memory_upstream(upstream))

    def answer_upstream(self, upstream: str) -> str:
        """The URL the answering (and, by default, judging) client calls instead of
        ``upstream``."""
        with self._lock:
            if self._answer_upstream is None:
                self._answer_upstream = upstream
            return self._proxy(self._answer, upstream).url

    def judge_upstream(self, upstream: str) -> str:
        """The URL a judge apart from the answerer calls instead of ``upstream``: its
        calls are counted in the ``judging`` window as the answerer's would be."""
        with self._lock:
            self._judge_upstream = upstream
            return self._proxy(self._answer, upstream).url

    @contextlib.contextmanager
    def phase(self, name: str, /) -> Iterator[None]:
        """The memory's calls inside the ``with`` block count for ``name``."""
        with ExitStack() as window:
            with self._lock:
                for proxy in self._memory.values():
                    window.enter_context(proxy.phase(name))
                self._window = (name, window)
            try:
                yield
            finally:
                with self._lock:
                    self._window = None

    @contextlib.contextmanager
    def answer_phase(self, name: str, /) -> Iterator[None]:
        """The answering and judging clients' calls inside the block count for ``name``."""
        with ExitStack() as window:
            with self._lock:
                for proxy in self._answer.values():
                    window.enter_context(proxy.phase(name))
            yield

    def settle(self) -> None:
        """Wait until every call answered so far has been passed to ``on_call``
        (:meth:`~himga.metering.RecordingProxy.settle` on each proxy)."""
        with self._lock:
            proxies = [*self._memory.values(), *self._answer.values()]
        for proxy in proxies:
            proxy.settle()

    @property
    def memory_endpoints(self) -> tuple[str, ...]:
        """The public URLs of the memory's upstreams metered so far, in order of first use."""
        with self._lock:
            return tuple(public_url(upstream) for upstream in self._memory)

    @property
    def answer_endpoint(self) -> str | None:
        """The public URL of the answering client's upstream; ``None`` without one."""
        upstream = self._answer_upstream
        return None if upstream is None else public_url(upstream)

    @property
    def judge_endpoint(self) -> str | None:
        """The public URL of a judge apart's upstream; ``None`` when there is none or it
        is the answerer's."""
        upstream = self._judge_upstream
        if upstream is None or upstream == self._answer_upstream:
            return None
        return public_url(upstream)

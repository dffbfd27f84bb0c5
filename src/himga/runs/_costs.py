"""What ``himga eval`` counts of the model calls a run makes, per phase, through loopback proxies.

The memory's own calls (an :class:`~himga.memory.EndpointUser` routed through a
:class:`~himga.integrations.RecordingProxy`; an :class:`~himga.memory.LLMUser`
given a client that calls through one) fall in the windows the evaluation loop
opens on the memory thread: ``preflight``, ``ingest``, ``retrieval``. The
answering and judging client calls through a proxy of its own, whose windows are
``answering`` (the evaluation loop) and ``judging`` (:func:`~himga.eval.batch_judge`):
each proxy's windows never overlap, so every call is counted once, in its phase.
Every call is appended to the run directory's ``calls.jsonl`` as it completes, so
a resumed run adds its calls to those of the parts before it -- an interrupted
part's included, even one killed outright -- and the manifest's ``costs`` is
their sum.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from himga.integrations import ProxyCall, RecordingProxy
from himga.llm._client import public_url

__all__ = ["CALLS_FILE", "CallLog", "RunMeter", "read_calls"]

#: The file of a run directory each metered model call is appended to.
CALLS_FILE = "calls.jsonl"


class CallLog:
    """Appends each call to a JSONL file, one flushed line per call, from any thread.

    Calls made before :meth:`open` (the pre-flight, before the run directory is
    claimed) are held and written first when it is opened. A call that cannot be
    written (a full disk) is held too, and the error kept for :meth:`check`: it
    arrives on a proxy's thread, where raising would only lose it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[ProxyCall] = []
        self._file: IO[str] | None = None
        self._path: Path | None = None
        self._failure: OSError | None = None

    def __call__(self, call: ProxyCall) -> None:
        with self._lock:
            self._held.append(call)
            if self._file is not None and self._failure is None:
                self._write_held()

    def open(self, path: Path) -> None:
        """Append to ``path`` from now on, the calls held so far first; a last line
        that an earlier process died writing is removed first (it counts no call)."""
        with self._lock:
            if path.exists():
                text = path.read_bytes()
                if not text.endswith(b"\n"):
                    with path.open("r+b") as file:
                        file.truncate(text.rfind(b"\n") + 1)
            self._file = path.open("a", encoding="utf-8")
            self._path = path
            self._write_held()

    def check(self) -> None:
        """Raise the ``OSError`` (naming the file) that kept a call from being written.

        Not retried: the failed write may have left part of a line, which only a
        resume (:meth:`open`) removes.
        """
        with self._lock:
            if self._failure is not None:
                raise self._failure

    def close(self) -> None:
        """Stop writing (later calls are held again)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _write_held(self) -> None:
        assert self._file is not None
        try:
            while self._held:
                self._file.write(json.dumps(self._held[0].to_json()) + "\n")
                self._file.flush()
                self._held.pop(0)
        except OSError as exc:
            self._failure = OSError(exc.errno, exc.strerror, str(self._path))


def read_calls(path: Path) -> list[ProxyCall]:
    """The calls of a ``calls.jsonl`` (none when it does not exist); ``ValueError`` naming
    the line of a malformed one. A last line cut short by a crash mid-write is skipped."""
    if not path.exists():
        return []
    lines = path.read_text("utf-8").splitlines()
    calls = []
    for number, line in enumerate(lines, start=1):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break  # the process died while writing it
            raise ValueError(f"{path}:{number}: invalid JSON") from None
        try:
            calls.append(ProxyCall.from_json(data))
        except (ValueError, AttributeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    return calls


class RunMeter:
    """The recording proxies of one ``himga eval`` invocation, closed with it.

    :meth:`route` sends a memory's own endpoint through a proxy (one per upstream,
    started on first use); :meth:`memory_upstream` and :meth:`answer_upstream` give
    the URL a client should call instead of an upstream, for the memory's client
    and the answering and judging one. :meth:`phase` is the memory's window (a
    :class:`~himga.eval.PhaseMeter`), :meth:`answer_phase` the answering client's.
    """

    def __init__(self, log: CallLog) -> None:
        self._log = log
        self._lock = threading.RLock()
        self._stack = ExitStack()
        self._memory: dict[str, RecordingProxy] = {}
        self._answer: RecordingProxy | None = None
        self._answer_upstream: str | None = None
        # The memory's open window, which a proxy started inside it joins.
        self._window: tuple[str, ExitStack] | None = None

    def __enter__(self) -> RunMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _memory_proxy(self, upstream: str) -> RecordingProxy:
        with self._lock:
            proxy = self._memory.get(upstream)
            if proxy is None:
                proxy = self._stack.enter_context(RecordingProxy(upstream, on_call=self._log))
                self._memory[upstream] = proxy
                if self._window is not None:
                    name, window = self._window
                    window.enter_context(proxy.phase(name))
            return proxy

    def memory_upstream(self, upstream: str) -> str:
        """The URL the memory's client calls instead of ``upstream``."""
        return self._memory_proxy(upstream).url

    def route(self, memory: object) -> None:
        """Route ``memory``'s endpoint through a proxy if it is an
        :class:`~himga.memory.EndpointUser` with one; otherwise leave it as it is."""
        from himga.memory import EndpointUser

        if isinstance(memory, EndpointUser):
            upstream = memory.llm_endpoint
            if upstream is not None:
                memory.route_llm(self.memory_upstream(upstream))

    def answer_upstream(self, upstream: str) -> str:
        """The URL the answering and judging client calls instead of ``upstream``."""
        with self._lock:
            if self._answer is None:
                self._answer = self._stack.enter_context(
                    RecordingProxy(upstream, on_call=self._log)
                )
                self._answer_upstream = upstream
            return self._answer.url

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
        """The answering and judging client's calls inside the block count for ``name``."""
        with self._answer.phase(name) if self._answer is not None else contextlib.nullcontext():
            yield

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

"""The run loop's guard around a memory: failures, wrong return types and timeouts as data.

Every call the evaluation makes into a memory goes through :class:`GuardedMemory`.
A call that raises, returns the wrong type or (with a timeout) does not return
in time raises :class:`MemoryCallFailed`, which the loop records on the
question it cost instead of letting it end the run.

Python cannot stop a running thread, so a timeout is enforced by making each
call on a dedicated daemon thread and waiting for it at most that long. A call
still running after its timeout is left to finish there; its result is thrown
away. Until it returns the memory is never called again -- two calls are never
in flight at once, so no state is shared between a late call and a new one --
and a call that finds it still running first waits up to one more timeout for
it -- the first call after the timeout, and every ``reset`` (a sample's first
call) -- and otherwise fails at once as :class:`MemoryBusyError`. A ``reset``
that finds the memory still busy after that wait, given a ``factory``, gives
up on the stuck instance: the next sample runs on a fresh one from the factory,
on a fresh thread. So a call that was only slow costs its own question (and
perhaps the next), a call that hangs for good costs the rest of its sample, and
the run always ends. The daemon thread never keeps the process alive.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import inspect
import math
import os
import queue
import threading
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from himga._errors import HimgaError
from himga._exit_guard import GUARD_FILE
from himga.data.schema import Message, Session
from himga.memory._protocol import EmbedReport, reports_embedding

__all__ = [
    "DEFAULT_MEMORY_TIMEOUT",
    "CallThread",
    "GuardedMemory",
    "MemoryBusyError",
    "MemoryCallFailed",
    "MemoryCallTimeout",
    "frame_location",
    "memory_timeout_argument",
    "parse_memory_timeout",
]

#: ``himga eval``'s per-call deadline when none is given: an hour, because one legitimate
#: call can take many minutes (a cold dense memory embeds a whole LongMemEval haystack in
#: its first ``retrieve``: ~17 minutes measured, docs/memories.md), while a call still
#: running after an hour is taken for hung.
DEFAULT_MEMORY_TIMEOUT = 3600.0
#: The shortest deadline accepted: below it every call would fail for the time Python
#: takes to hand it to a thread, and the failures would be blamed on the memory.
MIN_MEMORY_TIMEOUT = 0.001
#: What ``--memory-timeout`` takes for "no deadline".
NO_TIMEOUT = "none"


def parse_memory_timeout(text: str) -> float | None:
    """A ``--memory-timeout`` value: seconds (finite, at least :data:`MIN_MEMORY_TIMEOUT`,
    at most Python's longest wait), or ``none`` for no deadline (``None``).

    Raises :class:`ValueError` with a one-line message saying what is accepted.
    """
    if text.strip().lower() == NO_TIMEOUT:
        return None
    accepted = (
        f"expected seconds between {MIN_MEMORY_TIMEOUT:g} and {threading.TIMEOUT_MAX:.0f}, "
        f"or '{NO_TIMEOUT}' for no deadline"
    )
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds: {accepted}") from None
    if not math.isfinite(value) or not MIN_MEMORY_TIMEOUT <= value <= threading.TIMEOUT_MAX:
        raise ValueError(f"{text!r} is out of range: {accepted}")
    return value


def memory_timeout_argument(text: str) -> float | None:
    """``--memory-timeout S|none`` as an argparse ``type`` (the CLI's and the pytest
    plugin's): :func:`parse_memory_timeout`, its one-line message on a bad value."""
    try:
        return parse_memory_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


class MemoryCallTimeout(HimgaError):
    """A memory call did not return within the run's memory timeout."""


class MemoryBusyError(HimgaError):
    """A memory call was not made: an earlier call that timed out is still running."""


class MemoryCallFailed(HimgaError):
    """A call into the memory failed; ``method``, ``error_type`` and ``message`` say how.

    When the memory's code raised ``error``, ``traceback`` holds the frames it passed
    through below this guard (at most :data:`TRACEBACK_FRAMES`, innermost last) and
    ``raised_at`` the innermost as ``file:line in function``; both are ``None`` for a
    failure the guard itself found (a timeout, a return value of the wrong type).
    """

    def __init__(self, method: str, error: BaseException) -> None:
        self.method = method
        self.error = error
        self.error_type = type(error).__name__
        # Recorded in UTF-8 files: a lone surrogate in the memory's message is escaped.
        self.message = _text(str(error))
        frames = _memory_frames(error)
        self.raised_at = frame_location(frames[-1]) if frames else None
        self.traceback = _text("".join(traceback.format_list(frames))) if frames else None
        super().__init__(f"{method} raised {self.error_type}: {self.message}")


#: The innermost frames of a memory's exception that a failed call records.
TRACEBACK_FRAMES = 10
_GUARD = __file__


def _text(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _memory_frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``error``'s traceback below the last of this module's: the memory's."""
    frames = traceback.extract_tb(error.__traceback__)
    guard = [i for i, frame in enumerate(frames) if frame.filename == _GUARD]
    below = frames[guard[-1] + 1 :] if guard else frames
    # os._exit's replacement raised it: the memory's own frame called that.
    own = [frame for frame in below if frame.filename != GUARD_FILE]
    return own[-TRACEBACK_FRAMES:]


def frame_location(frame: traceback.FrameSummary) -> str:
    """``file:line in function``, the file relative to the working directory when inside it."""
    path = frame.filename
    with contextlib.suppress(ValueError):  # on another drive (Windows)
        relative = os.path.relpath(path)
        path = path if relative.startswith("..") else relative
    return f"{path}:{frame.lineno} in {frame.name}"


class CallThread:
    """One daemon thread running submitted calls in order, one at a time.

    A daemon, so a call that never returns keeps neither Ctrl-C from ending the
    run nor the process alive after it.
    """

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[
            tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name="himga-memory-call", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            future, function, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = function(*args)
            except BaseException as exc:  # handed to the waiting caller, whatever it is
                future.set_exception(exc)
            else:
                future.set_result(result)

    def submit(self, function: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((future, function, args))
        return future

    def close(self) -> None:
        """Let the thread end once its current call (if any) returns."""
        self._calls.put(None)


class GuardedMemory:
    """``memory`` as the evaluation calls it: each call checked, and timed when ``timeout`` is set.

    ``retrieve`` must return a ``str``; ``search`` a sequence of at most ``k``
    hits, each with a ``turn_id`` that is a ``str`` or ``None``. Anything else,
    an exception, or no return within ``timeout`` seconds raises
    :class:`MemoryCallFailed` (module docstring: what happens to a late call).
    ``on_ingest`` is called after each ``ingest`` that returned (the run's progress);
    ``on_embedded`` is given to each memory it holds that reports its embedding
    (:class:`~himga.memory.ReportsEmbedding`, with an embedder).
    """

    def __init__(
        self,
        memory: Any,
        timeout: float | None = None,
        factory: Callable[[], Any] | None = None,
        on_ingest: Callable[[], None] | None = None,
        on_embedded: EmbedReport | None = None,
    ) -> None:
        if timeout is not None and not MIN_MEMORY_TIMEOUT <= timeout <= threading.TIMEOUT_MAX:
            raise ValueError(
                f"memory timeout must be between {MIN_MEMORY_TIMEOUT:g} and "
                f"{threading.TIMEOUT_MAX:.0f} seconds (None: no deadline), got {timeout!r}"
            )
        self._memory = memory
        self._factory = factory
        self._on_ingest = on_ingest
        self._on_embedded = on_embedded
        self._watch(memory)
        self._timeout = timeout
        self._worker = self._start_worker() if timeout is not None else None
        self._late: concurrent.futures.Future[Any] | None = None
        self._late_method = ""
        self._waited = False

    def _watch(self, memory: Any) -> None:
        if self._on_embedded is not None and reports_embedding(memory):
            memory.report_embedding(self._on_embedded)

    def _start_worker(self) -> CallThread:
        worker = CallThread()
        weakref.finalize(self, worker.close)
        return worker

    def call(self, method: str, *args: Any) -> Any:
        """``memory.<method>(*args)``, its return value unchecked; raises
        :class:`MemoryCallFailed` if it raises or times out."""
        if self._worker is None:
            function = getattr(self._memory, method)
            try:
                return function(*args)
            except KeyboardInterrupt:
                raise  # Ctrl-C (or as good as): the run stops, keeping what it finished
            except BaseException as exc:  # sys.exit too: a memory's failure, never the run's
                raise MemoryCallFailed(method, exc) from exc
        if self._late is not None:
            if method == "reset" or not self._waited:
                self._waited = True
                concurrent.futures.wait([self._late], timeout=self._timeout)
            if not self._late.done() and method == "reset" and self._factory is not None:
                self._replace_stuck_memory()
            elif not self._late.done():
                busy = MemoryBusyError(
                    f"not called: the memory is still running a {self._late_method} call "
                    f"that exceeded the {self._timeout:g} s timeout"
                )
                raise MemoryCallFailed(method, busy)
            self._late = None
        future = self._worker.submit(getattr(self._memory, method), *args)
        try:
            return future.result(timeout=self._timeout)
        except concurrent.futures.TimeoutError:
            self._late, self._late_method, self._waited = future, method, False
            late = MemoryCallTimeout(f"did not return within {self._timeout:g} s")
            raise MemoryCallFailed(method, late) from None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise MemoryCallFailed(method, exc) from exc

    def _replace_stuck_memory(self) -> None:
        assert self._factory is not None
        assert self._worker is not None
        try:
            fresh = self._factory()
        except Exception as exc:
            raise MemoryCallFailed("reset", exc) from exc
        self._worker.close()  # the stuck call keeps the old thread until it returns
        self._watch(fresh)
        self._memory, self._worker, self._late = fresh, self._start_worker(), None

    def reset(self) -> None:
        self.call("reset")

    def ingest(self, message: Message, session: Session, /) -> None:
        self.call("ingest", message, session)
        if self._on_ingest is not None:
            self._on_ingest()

    def retrieve(self, query: str, /) -> str:
        context = self.call("retrieve", query)
        if not isinstance(context, str):
            raise MemoryCallFailed("retrieve", TypeError(f"returned {_kind(context)}, not a str"))
        try:
            context.encode("utf-8")
        except UnicodeEncodeError as exc:  # it could be neither recorded nor sent to an LLM
            problem = f"returned a str that is not Unicode text: {exc.reason} at {exc.start}"
            raise MemoryCallFailed("retrieve", ValueError(problem)) from None
        return context

    def search_turn_ids(self, query: str, k: int) -> list[str | None]:
        """The ``turn_id`` of each hit of ``search(query, k)``, best first."""
        hits = self.call("search", query, k)
        if not isinstance(hits, Sequence) or isinstance(hits, (str, bytes)):
            problem = f"returned {_kind(hits)}, not a sequence of hits"
            raise MemoryCallFailed("search", TypeError(problem))
        if len(hits) > k:
            raise MemoryCallFailed("search", ValueError(f"returned {len(hits)} hits for k={k}"))
        turn_ids: list[str | None] = []
        for position, hit in enumerate(hits):
            turn_id = getattr(hit, "turn_id", _MISSING)
            if turn_id is not None and not isinstance(turn_id, str):
                what = "no turn_id" if turn_id is _MISSING else f"turn_id {_kind(turn_id)}"
                problem = f"hit {position} is {_kind(hit)} with {what} (expected a Hit)"
                raise MemoryCallFailed("search", TypeError(problem))
            turn_ids.append(turn_id)
        return turn_ids

    def close(self) -> None:
        """Release the timing thread (a late call still running finishes on its own), and
        stop the memory's embedding reports (it may outlive the run: the caller's agent)."""
        if self._worker is not None:
            self._worker.close()
        if self._on_embedded is not None and reports_embedding(self._memory):
            self._memory.report_embedding(None)


_MISSING: Any = object()


def _kind(value: object) -> str:
    if inspect.iscoroutine(value):
        value.close()  # never awaited: closed, so Python does not warn about it later
        return "a coroutine (is the method 'async def'?)"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"

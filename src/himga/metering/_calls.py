"""What ``himga eval`` counts of the model calls a run makes, per phase, through loopback proxies.

The memory's own calls (an :class:`~himga.memory.EndpointUser` routed through a
:class:`~himga.metering.RecordingProxy`; an :class:`~himga.memory.LLMUser`
given a client that calls through one) fall in the windows the evaluation loop
opens on the memory thread: ``preflight``, ``ingest``, ``retrieval``. The
answering and judging client calls through a proxy of its own, whose windows are
``answering`` (the evaluation loop) and ``judging`` (:func:`~himga.eval.batch_judge`):
each proxy's windows never overlap, so every call is counted once, in its phase.
Every call is appended to the run directory's ``calls.jsonl`` as it completes, so
a resumed run adds its calls to those of the parts before it -- an interrupted
part's included, even one killed outright -- and the manifest's ``costs`` is
their sum. On Ray each worker meters its own agent with a
:class:`~himga.metering.RunMeter` of its own, in the same windows,
and its calls reach the log when it returns their sample (those of an attempt
lost with its actor never do).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO

from himga.metering._proxy import ProxyCall

__all__ = ["CALLS_FILE", "CallLog", "read_calls"]

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
            try:
                if path.exists():
                    text = path.read_bytes()
                    if not text.endswith(b"\n"):
                        with path.open("r+b") as file:
                            file.truncate(text.rfind(b"\n") + 1)
                self._file = path.open("a", encoding="utf-8")
            except OSError as exc:  # say which file could not be written
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
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

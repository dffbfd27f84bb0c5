"""``python .../himga/llm/_watchdog.py COMMAND...``: run COMMAND, stop it when himga goes.

The keeper between himga and a local model server it started. It runs the
command as its child and stops it (SIGTERM, then SIGKILL after a grace period)
when its standard input reaches end of file -- which happens when himga closes
the pipe to stop the server, and also when himga dies in any way, ``kill -9``
included, because the kernel closes a dead process's end of the pipe. SIGTERM,
SIGINT and SIGHUP stop it the same way. On Linux the child also gets
``PR_SET_PDEATHSIG``: should the watchdog itself be killed, the kernel kills the
server. (The signal goes with the *thread* that started the child, so it is set
here, in a process whose only starter is its main thread, not in himga, which may
start a server from any thread.) The exit status is the command's.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

__all__ = ["STOP_GRACE", "main"]

#: Seconds the server has to stop after SIGTERM before it is killed.
STOP_GRACE = 5.0
_PR_SET_PDEATHSIG = 1


def _die_with(watchdog: int) -> Callable[[], None]:
    """What the child runs before ``exec``: arm SIGKILL for when the watchdog dies."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != watchdog:  # the watchdog died before the signal was armed
            os._exit(1)

    return arm


def main(argv: Sequence[str]) -> int:
    """Run ``argv`` until it exits or the watchdog is told (or left) to stop it."""
    if not argv:
        print(f"usage: python {__file__} COMMAND [ARG...]", file=sys.stderr)
        return 2
    watchdog = os.getpid()
    linux = sys.platform.startswith("linux")
    server = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with(watchdog) if linux else None,
    )
    stopping = threading.Event()

    def stop() -> None:
        if stopping.is_set():
            return
        stopping.set()
        if server.poll() is None:
            server.terminate()
            killer = threading.Timer(STOP_GRACE, server.kill)
            killer.daemon = True
            killer.start()

    def on_signal(signum: int, frame: object) -> None:
        stop()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)

    def watch_parent() -> None:
        # The raw descriptor, not sys.stdin: a thread blocked in a buffered read would
        # hold its lock while the interpreter shuts down after the server exits.
        while os.read(0, 4096):  # b"" at end of file: himga closed the pipe or died
            pass
        stop()

    threading.Thread(target=watch_parent, name="himga-watchdog", daemon=True).start()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

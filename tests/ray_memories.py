"""Memories for the Ray tests, importable by the workers as ``tests.ray_memories:<name>``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from himga.data import Message, Session
from himga.memory import KeywordMemory


class CrashingMemory(KeywordMemory):
    """A :class:`~himga.memory.KeywordMemory` whose process dies (``os._exit``) at its
    ``crash_at``-th ingest while ``armed`` names no file (it creates it first), so
    the crash happens once, mid-sample; with ``always`` it dies at every ``crash_at``-th
    ingest whatever the file."""

    def __init__(self, armed: str, crash_at: int = 50, always: bool = False, k: int = 10) -> None:
        super().__init__(k=k)
        self.armed = armed
        self.crash_at = crash_at
        self.always = always
        self._ingested = 0

    def __repr__(self) -> str:
        return f"CrashingMemory(k={self.k})"

    def ingest(self, message: Message, session: Session) -> None:
        self._ingested += 1
        if self._ingested == self.crash_at:
            marker = Path(self.armed)
            if self.always or not marker.exists():
                marker.touch()
                os._exit(1)
        super().ingest(message, session)


class HangingMemory(KeywordMemory):
    """A :class:`~himga.memory.KeywordMemory` that hangs in its first ingest, after creating
    the file ``started`` names (so a test knows a worker is inside it)."""

    def __init__(self, started: str, k: int = 10) -> None:
        super().__init__(k=k)
        self.started = started

    def __repr__(self) -> str:
        return f"HangingMemory(k={self.k})"

    def ingest(self, message: Message, session: Session) -> None:
        Path(self.started).touch()
        time.sleep(3600)


class GatedMemory(KeywordMemory):
    """A :class:`~himga.memory.KeywordMemory` whose retrieve waits (up to a minute) until
    the file ``release`` names exists, after creating the file ``retrieving`` names: its
    ingest is done, its questions are not (a test looks at the run in between)."""

    def __init__(self, retrieving: str, release: str, k: int = 10) -> None:
        super().__init__(k=k)
        self.retrieving = retrieving
        self.release = release

    def __repr__(self) -> str:
        return f"GatedMemory(k={self.k})"

    def retrieve(self, query: str, /) -> str:
        Path(self.retrieving).touch()
        deadline = time.monotonic() + 60
        while not Path(self.release).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return super().retrieve(query)

"""Memories that go wrong in the ways ``himga eval`` must survive (this module has no tests).

Each is a :class:`~himga.memory.KeywordMemory` but for one defect, so its run
is real: pre-flight must catch the defects it can see, and the run must record
the others per question. ``MARKER`` ("Caroline", a speaker of LoCoMo's first
conversation, conv-26, absent from the second, conv-30, and from anything the
conformance kit generates) triggers the conditional defects.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from himga.data.schema import Message, Session
from himga.memory import Hit, KeywordMemory

MARKER = "Caroline"
_NEVER = threading.Event()


class AsyncRetrieve(KeywordMemory):
    """``retrieve`` is ``async def``: a coroutine instead of a ``str``."""

    async def retrieve(self, query: str, /) -> str:  # type: ignore[override]
        return ""


class NoneRetrieve(KeywordMemory):
    """``retrieve`` returns ``None`` whatever the query."""

    def retrieve(self, query: str, /) -> Any:
        return None


class RaisingRetrieve(KeywordMemory):
    """``retrieve`` raises for every query."""

    def retrieve(self, query: str, /) -> str:
        raise RuntimeError("retrieve is broken")


class RaisesOnMarker(KeywordMemory):
    """``retrieve`` raises for questions naming ``MARKER``, works otherwise."""

    def retrieve(self, query: str, /) -> str:
        if MARKER in query:
            raise ValueError(f"cannot retrieve for {query!r}")
        return super().retrieve(query)


class IngestRaisesOnMarker(KeywordMemory):
    """``ingest`` raises on a message naming ``MARKER`` (conv-26 has them, conv-30 not)."""

    def ingest(self, message: Message, session: Session, /) -> None:
        if MARKER in message.content:
            raise OSError("disk full")
        super().ingest(message, session)


class ExitsOnMarker(KeywordMemory):
    """``retrieve`` calls ``os._exit(0)`` for questions naming ``MARKER``, works otherwise."""

    def retrieve(self, query: str, /) -> str:
        if MARKER in query:
            os._exit(0)
        return super().retrieve(query)


class HangsOnMarker(KeywordMemory):
    """``retrieve`` never returns for questions naming ``MARKER``."""

    def retrieve(self, query: str, /) -> str:
        if MARKER in query:
            _NEVER.wait()
        return super().retrieve(query)


class HangsAlways(KeywordMemory):
    """``retrieve`` never returns once something was ingested."""

    def retrieve(self, query: str, /) -> str:
        if super().retrieve("memory") or super().retrieve(query):
            _NEVER.wait()
        return super().retrieve(query)


class DictHits(KeywordMemory):
    """``search`` returns dicts instead of :class:`~himga.memory.Hit` objects."""

    def retrieve(self, query: str, /) -> str:
        hits = KeywordMemory.search(self, query, self.k)
        return "\n".join(hit.text for hit in reversed(hits))

    def search(self, query: str, k: int, /) -> list[Hit]:
        return [{"turn_id": hit.turn_id} for hit in super().search(query, k)]  # type: ignore[misc]


class HangsInSecondSample(KeywordMemory):
    """``retrieve`` never returns in the second sample (``reset`` starts each sample), after
    creating the file ``$HIMGA_TEST_HANG_FLAG`` names, so a test knows it hangs."""

    def __init__(self, k: int = 10) -> None:
        super().__init__(k)
        self.resets = 0

    def reset(self) -> None:
        super().reset()
        self.resets += 1

    def retrieve(self, query: str, /) -> str:
        if self.resets >= 2:
            Path(os.environ["HIMGA_TEST_HANG_FLAG"]).touch()
            _NEVER.wait()
        return super().retrieve(query)


class KeepsAThread(KeywordMemory):
    """Starts a non-daemon thread that never ends, as a background indexer might."""

    def __init__(self, k: int = 10) -> None:
        super().__init__(k)
        threading.Thread(target=_NEVER.wait, name="indexer", daemon=False).start()

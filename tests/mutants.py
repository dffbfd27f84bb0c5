"""Memories that break one contract each (``BROKEN``) and legal but unusual ones (``LEGAL``).

They prove the conformance kit: every broken memory must be flagged under its
contract id, every legal one must pass. ``BROKEN_IF_DETERMINISTIC`` are legal,
but break their contract when declared deterministic (``deterministic=True``);
every other legal memory is deterministic and passes that mode too. Each broken
memory is a small variation of :class:`ListMemory`, the simplest correct memory.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from himga.data.schema import Message, Session
from himga.memory import BaseMemory, Hit


def _matching(lines: list[str], query: str) -> str:
    words = set(query.lower().split())
    return "\n".join(line for line in lines if words & set(line.lower().split()))


class ListMemory:
    """The simplest correct memory: a list of lines, keyword-matched."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self.lines.append(f"{message.role}: {message.content}")

    def retrieve(self, query: str, /) -> str:
        return _matching(self.lines, query)

    def reset(self) -> None:
        self.lines = []


class SimpleKeywordMemory(BaseMemory):
    """The seed's example, as written there: an explicit subclass with ordinary parameters.

    Stores (message, session) pairs and returns the lines sharing a word with the query.
    """

    def __init__(self) -> None:
        self._store: list[tuple[Message, Session]] = []

    def ingest(self, message: Message, session: Session) -> None:
        self._store.append((message, session))

    def retrieve(self, query: str) -> str:
        words = set(query.lower().split())
        lines = [
            f"[{session.date_str}] {message.role}: {message.content}"
            for message, session in self._store
            if words & set(message.content.lower().split())
        ]
        return "\n".join(lines)

    def reset(self) -> None:
        self._store.clear()


# -- legal but unusual --------------------------------------------------------


class RandomSampleMemory(ListMemory):
    """Returns a random sample of everything it holds, whatever the query."""

    def retrieve(self, query: str, /) -> str:
        if not self.lines:
            return ""
        return "\n".join(random.sample(self.lines, random.randint(1, len(self.lines))))


class LatestLinesMemory(ListMemory):
    """Returns its three latest lines for any non-empty query, relevant or not."""

    def retrieve(self, query: str, /) -> str:
        return "\n".join(self.lines[-3:]) if query.strip() else ""


class ExtraParamsMemory(ListMemory):
    """Takes extra optional parameters, positional and keyword-only."""

    def ingest(
        self, message: Message, session: Session, /, weight: float = 1.0, *, tag: str = ""
    ) -> None:
        self.lines.append(f"{tag}{message.content}")

    def retrieve(self, query: str, /, k: int = 5, *, separator: str = "\n") -> str:
        return separator.join(_matching(self.lines, query).splitlines()[-k:])


class QueryHeaderMemory(ListMemory):
    """Heads its latest lines with the query it was asked: echoing the query is no leak."""

    def retrieve(self, query: str, /) -> str:
        if not self.lines:
            return ""
        return f"Context for {query}:\n" + "\n".join(self.lines[-3:])


class SubclassedMemory(BaseMemory):
    """Inherits from the protocol explicitly (the seed's 5.2 style), with its own names."""

    def __init__(self) -> None:
        self.turns: dict[int, str] = {}

    def ingest(self, msg: Message, sess: Session, /) -> None:
        self.turns[len(self.turns)] = msg.content

    def retrieve(self, question: str, /) -> str:
        return _matching(list(self.turns.values()), question)

    def reset(self) -> None:
        self.turns.clear()


class VarArgsMemory(ListMemory):
    """Accepts its arguments through ``*args``."""

    def ingest(self, *args: Any) -> None:
        message: Message = args[0]
        self.lines.append(message.content)


class SearchableListMemory(ListMemory):
    """A correct search: the matching turns, latest first, scored by position."""

    def __init__(self) -> None:
        super().__init__()
        self.turn_ids: list[str | None] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        super().ingest(message, session)
        self.turn_ids.append(message.turn_id)

    def search(self, query: str, k: int, /) -> list[Hit]:
        words = set(query.lower().split())
        hits = [
            Hit(turn_id, float(position), line)
            for position, (turn_id, line) in enumerate(zip(self.turn_ids, self.lines, strict=True))
            if words & set(line.lower().split())
        ]
        return hits[::-1][: max(k, 0)]

    def reset(self) -> None:
        super().reset()
        self.turn_ids = []


class BoundInInit:
    """Binds its methods in ``__init__`` (closures over a list): the class has none."""

    def __init__(self) -> None:
        lines: list[str] = []

        def ingest(message: Message, session: Session, /) -> None:
            lines.append(message.content)

        def reset() -> None:
            lines.clear()

        self.ingest = ingest
        self.retrieve = lambda query: _matching(lines, query)
        self.reset = reset


class ProxyMemory:
    """Forwards every attribute to a wrapped :class:`ListMemory` through ``__getattr__``."""

    def __init__(self) -> None:
        self._inner = ListMemory()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


LEGAL: dict[str, Callable[[], Any]] = {
    "ListMemory": ListMemory,
    "SimpleKeywordMemory": SimpleKeywordMemory,
    "RandomSampleMemory": RandomSampleMemory,
    "LatestLinesMemory": LatestLinesMemory,
    "QueryHeaderMemory": QueryHeaderMemory,
    "ExtraParamsMemory": ExtraParamsMemory,
    "SubclassedMemory": SubclassedMemory,
    "VarArgsMemory": VarArgsMemory,
    "SearchableListMemory": SearchableListMemory,
    "BoundInInit": BoundInInit,
    "ProxyMemory": ProxyMemory,
}


# -- broken: protocol-shape -----------------------------------------------------


class AsyncRetrieve(ListMemory):
    async def retrieve(self, query: str, /) -> str:  # type: ignore[override]
        return _matching(self.lines, query)


class MissingReset:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self.lines.append(message.content)

    def retrieve(self, query: str, /) -> str:
        return _matching(self.lines, query)


class MissingSession(ListMemory):
    def ingest(self, message: Message) -> None:  # type: ignore[override]
        self.lines.append(message.content)


class KeywordOnlySession(ListMemory):
    def ingest(self, message: Message, *, session: Session) -> None:  # type: ignore[override]
        self.lines.append(message.content)


class RequiredExtraParam(ListMemory):
    def retrieve(self, query: str, k: int) -> str:  # type: ignore[override]
        return _matching(self.lines, query)


# -- broken: retrieve-returns-str ----------------------------------------------------


class ReturnsNone(ListMemory):
    def retrieve(self, query: str, /) -> str | None:  # type: ignore[override]
        return _matching(self.lines, query) or None


class ReturnsList(ListMemory):
    def retrieve(self, query: str, /) -> list[str]:  # type: ignore[override]
        return _matching(self.lines, query).splitlines()


class CrashesOnNonAscii(ListMemory):
    def retrieve(self, query: str, /) -> str:
        return _matching(self.lines, query.encode("ascii").decode())


class CrashesOnLongQuery(ListMemory):
    def retrieve(self, query: str, /) -> str:
        if len(query) > 2_000:
            raise ValueError("query too long")
        return super().retrieve(query)


class IngestCrashesOnEmoji(ListMemory):
    def ingest(self, message: Message, session: Session, /) -> None:
        if any(ord(c) > 0xFFFF for c in message.content):
            raise UnicodeError("no astral characters, please")
        super().ingest(message, session)


# -- broken: retrieve-empty-query -----------------------------------------------------


class CrashesOnBlankQuery(ListMemory):
    def retrieve(self, query: str, /) -> str:
        first_word = query.split()[0]  # IndexError on "" and whitespace-only queries
        return _matching(self.lines, first_word)


# -- broken: reset-clears ------------------------------------------------------------


class ResetOnlyHides(ListMemory):
    """reset() hides the old lines until the next ingest shows them all again."""

    def __init__(self) -> None:
        super().__init__()
        self.visible = True

    def ingest(self, message: Message, session: Session, /) -> None:
        super().ingest(message, session)
        self.visible = True

    def retrieve(self, query: str, /) -> str:
        return super().retrieve(query) if self.visible else ""

    def reset(self) -> None:
        self.visible = False


class ResetKeepsLast(ListMemory):
    """reset() forgets all but the latest line."""

    def reset(self) -> None:
        self.lines = self.lines[-1:]


class AlwaysHeader(ListMemory):
    """Prefixes a header even when it holds nothing."""

    def retrieve(self, query: str, /) -> str:
        return "Relevant memories:\n" + super().retrieve(query)


class BlankQueryAnswered(ListMemory):
    """Answers a blank query with a hint, even when it holds nothing."""

    def retrieve(self, query: str, /) -> str:
        return super().retrieve(query) if query.strip() else "(ask about something)"


class SearchIndexSurvivesReset(SearchableListMemory):
    """reset() clears the lines retrieve reads, not the index search reads."""

    def __init__(self) -> None:
        super().__init__()
        self.index: list[tuple[str | None, str]] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        super().ingest(message, session)
        self.index.append((message.turn_id, self.lines[-1]))

    def search(self, query: str, k: int, /) -> list[Hit]:
        words = set(query.lower().split())
        hits = [
            Hit(turn_id, float(position), line)
            for position, (turn_id, line) in enumerate(self.index)
            if words & set(line.lower().split())
        ]
        return hits[::-1][: max(k, 0)]


class LineCacheSurvivesReset(ListMemory):
    """Caches each turn's line by (session id, turn id); reset() forgets the lines, not the cache.

    Real runs reuse ids such as ``D1:3`` in every sample: after a reset, the cached
    line of the earlier sample's turn is stored instead of the new one.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[tuple[str, str | None], str] = {}

    def ingest(self, message: Message, session: Session, /) -> None:
        key = (session.session_id, message.turn_id)
        if message.turn_id is None or key not in self.cache:
            self.cache[key] = f"{message.role}: {message.content}"
        self.lines.append(self.cache[key])


class SpeakersSurviveReset(ListMemory):
    """Heads its output with the speakers it has seen; the lazy reset() forgets to clear them."""

    def __init__(self) -> None:
        super().__init__()
        self.speakers: list[str] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        super().ingest(message, session)
        if message.role not in self.speakers:
            self.speakers.append(message.role)

    def retrieve(self, query: str, /) -> str:
        found = super().retrieve(query)
        return f"Speakers: {', '.join(self.speakers)}\n{found}" if found else ""


class SessionsSurviveReset(ListMemory):
    """Lists the sessions seen (ids and dates) in every non-empty output; reset keeps them."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions: dict[str, str | None] = {}

    def ingest(self, message: Message, session: Session, /) -> None:
        super().ingest(message, session)
        self.sessions[session.session_id] = session.date_str

    def retrieve(self, query: str, /) -> str:
        found = super().retrieve(query)
        if not found:
            return ""
        seen = "; ".join(f"{sid} ({date})" for sid, date in self.sessions.items())
        return f"Sessions: {seen}\n{found}"


# -- broken: search-returns-hits --------------------------------------------------------


class SearchIgnoresK(SearchableListMemory):
    def search(self, query: str, k: int, /) -> list[Hit]:
        return super().search(query, len(self.lines))


class SearchWorstFirst(SearchableListMemory):
    def search(self, query: str, k: int, /) -> list[Hit]:
        return super().search(query, k)[::-1]


class SearchCrashesOnBlankQuery(SearchableListMemory):
    def search(self, query: str, k: int, /) -> list[Hit]:
        query.split()[0]  # IndexError on blank queries
        return super().search(query, k)


class SearchReturnsText(SearchableListMemory):
    def search(self, query: str, k: int, /) -> str:  # type: ignore[override]
        return self.retrieve(query)


# -- broken: reuse-after-reset ----------------------------------------------------------


class ResetBreaksObject(ListMemory):
    def reset(self) -> None:
        del self.lines


# -- broken: instance-isolation ---------------------------------------------------------


class ClassLevelList:
    lines: ClassVar[list[str]] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self.lines.append(message.content)

    def retrieve(self, query: str, /) -> str:
        return _matching(self.lines, query)

    def reset(self) -> None:
        self.lines.clear()


class MutableDefault(ListMemory):
    def __init__(self, lines: list[str] = []) -> None:  # noqa: B006 -- the bug under test
        self.lines = lines

    def reset(self) -> None:
        self.lines.clear()


_STORE: list[tuple[int, str]] = []


class ModuleLevelStore:
    """Keeps every instance's lines in one module-level list, tagged by instance id."""

    def ingest(self, message: Message, session: Session, /) -> None:
        _STORE.append((id(self), message.content))

    def retrieve(self, query: str, /) -> str:
        # Bug: filters by the query only, not by owner.
        return _matching([line for _, line in _STORE], query)

    def reset(self) -> None:
        _STORE[:] = [(owner, line) for owner, line in _STORE if owner != id(self)]


_LIVE: weakref.WeakSet[ReportsOthers] = weakref.WeakSet()


class ReportsOthers(ListMemory):
    """Leaks no text, but its output tells how much the other live instances hold."""

    def __init__(self) -> None:
        super().__init__()
        _LIVE.add(self)

    def retrieve(self, query: str, /) -> str:
        others = sum(len(memory.lines) for memory in _LIVE if memory is not self)
        own = super().retrieve(query)
        return f"{own}\n({others} turns held elsewhere)" if others else own


# -- legal by default, broken when declared deterministic ----------------------------------


class DedupSetSurvivesReset(ListMemory):
    """Skips a turn whose (session id, turn id) it has seen; reset() forgets to clear that set.

    After a reset, the next sample's turns that reuse ids (``D1:3``) are dropped.
    Dropping turns is legal for a memory that promises nothing (it need not be
    relevant); a deterministic memory's reset instance must behave like a fresh one.
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str | None]] = set()

    def ingest(self, message: Message, session: Session, /) -> None:
        key = (session.session_id, message.turn_id)
        if message.turn_id is not None and key in self.seen:
            return
        self.seen.add(key)
        super().ingest(message, session)


class SharedCounter(ListMemory):
    """Numbers its non-empty outputs with a counter shared by every instance."""

    served: ClassVar[int] = 0

    def retrieve(self, query: str, /) -> str:
        found = super().retrieve(query)
        if not found:
            return ""
        SharedCounter.served += 1
        return f"{found}\n(retrieval #{SharedCounter.served})"


# Caught only by check_memory(..., deterministic=True), under this id; legal otherwise.
BROKEN_IF_DETERMINISTIC: dict[str, tuple[Callable[[], Any], str]] = {
    "DedupSetSurvivesReset": (DedupSetSurvivesReset, "reset-clears"),
    "SharedCounter": (SharedCounter, "instance-isolation"),
}


# The contract id each broken memory must be flagged with.
BROKEN: dict[str, tuple[Callable[[], Any], str]] = {
    "AsyncRetrieve": (AsyncRetrieve, "protocol-shape"),
    "MissingReset": (MissingReset, "protocol-shape"),
    "MissingSession": (MissingSession, "protocol-shape"),
    "KeywordOnlySession": (KeywordOnlySession, "protocol-shape"),
    "RequiredExtraParam": (RequiredExtraParam, "protocol-shape"),
    "ReturnsNone": (ReturnsNone, "retrieve-returns-str"),
    "ReturnsList": (ReturnsList, "retrieve-returns-str"),
    "CrashesOnNonAscii": (CrashesOnNonAscii, "retrieve-returns-str"),
    "CrashesOnLongQuery": (CrashesOnLongQuery, "retrieve-returns-str"),
    "IngestCrashesOnEmoji": (IngestCrashesOnEmoji, "retrieve-returns-str"),
    "CrashesOnBlankQuery": (CrashesOnBlankQuery, "retrieve-empty-query"),
    "ResetOnlyHides": (ResetOnlyHides, "reset-clears"),
    "ResetKeepsLast": (ResetKeepsLast, "reset-clears"),
    "AlwaysHeader": (AlwaysHeader, "reset-clears"),
    "BlankQueryAnswered": (BlankQueryAnswered, "reset-clears"),
    "ResetBreaksObject": (ResetBreaksObject, "reuse-after-reset"),
    "ClassLevelList": (ClassLevelList, "instance-isolation"),
    "MutableDefault": (MutableDefault, "instance-isolation"),
    "ModuleLevelStore": (ModuleLevelStore, "instance-isolation"),
    "ReportsOthers": (ReportsOthers, "instance-isolation"),
    "SearchIndexSurvivesReset": (SearchIndexSurvivesReset, "reset-clears"),
    "LineCacheSurvivesReset": (LineCacheSurvivesReset, "reset-clears"),
    "SpeakersSurviveReset": (SpeakersSurviveReset, "reset-clears"),
    "SessionsSurviveReset": (SessionsSurviveReset, "reset-clears"),
    "SearchIgnoresK": (SearchIgnoresK, "search-returns-hits"),
    "SearchWorstFirst": (SearchWorstFirst, "search-returns-hits"),
    "SearchCrashesOnBlankQuery": (SearchCrashesOnBlankQuery, "search-returns-hits"),
    "SearchReturnsText": (SearchReturnsText, "search-returns-hits"),
}

"""Static conformance to BaseMemory under mypy --strict and pyright (never run).

Conforming classes assign to ``BaseMemory`` cleanly. Each non-conforming one
carries the exact error each checker must report: ``# type: ignore[<code>]``
for mypy (``--warn-unused-ignores``) and ``# pyright: ignore[<rule>]`` for
basedpyright (``reportUnnecessaryTypeIgnoreComment``, ``enableTypeIgnoreComments
= false``, so neither checker reads the other's comment). Should a check stop
firing, its ignore becomes unused and that checker fails CI.
"""

from __future__ import annotations

from himga.data.schema import Message, Session
from himga.memory import BaseMemory, NullMemory, SearchableMemory
from himga.memory._protocol import Hit

# -- conforming ---------------------------------------------------------------


class Plain:
    def ingest(self, message: Message, session: Session) -> None: ...
    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None: ...


class OwnNames:
    """Parameter names are free: the protocol's are positional-only."""

    def ingest(self, msg: Message, sess: Session, /) -> None: ...
    def retrieve(self, q: str, /) -> str:
        return ""

    def reset(self) -> None: ...


class RenamedPlain:
    """mypy ignores protocol parameter names even when they are not positional-only."""

    def ingest(self, msg: Message, sess: Session) -> None: ...
    def retrieve(self, question: str) -> str:
        return ""

    def reset(self) -> None: ...


class ExtraOptional:
    def ingest(self, message: Message, session: Session, weight: float = 1.0) -> None: ...
    def retrieve(self, query: str, /, k: int = 5, *, separator: str = "\n") -> str:
        return ""

    def reset(self, *, hard: bool = False) -> None: ...


class Explicit(BaseMemory):
    def ingest(self, message: Message, session: Session, /) -> None: ...
    def retrieve(self, query: str, /) -> str:
        return ""

    def reset(self) -> None: ...


class Searchable(Plain):
    def search(self, query: str, k: int, /) -> list[Hit]:
        return []


null: BaseMemory = NullMemory()
plain: BaseMemory = Plain()
own_names: BaseMemory = OwnNames()
renamed_plain: BaseMemory = RenamedPlain()
extra_optional: BaseMemory = ExtraOptional()
explicit: BaseMemory = Explicit()
searchable: SearchableMemory = Searchable()
searchable_as_base: BaseMemory = Searchable()


def use(memory: BaseMemory) -> str:
    memory.ingest(Message(role="user", content="hi"), Session(session_id="s1", messages=[]))
    memory.reset()
    return memory.retrieve("hi")


# -- non-conforming: each line must stay an error ----------------------------------


class OptionalReturn:
    def ingest(self, message: Message, session: Session) -> None: ...
    def retrieve(self, query: str) -> str | None:
        return None

    def reset(self) -> None: ...


class MissingSession:
    def ingest(self, message: Message) -> None: ...
    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None: ...


class StrMessage:
    def ingest(self, message: str, session: Session) -> None: ...
    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None: ...


class MissingReset:
    def ingest(self, message: Message, session: Session) -> None: ...
    def retrieve(self, query: str) -> str:
        return ""


class IntQuery:
    def ingest(self, message: Message, session: Session) -> None: ...
    def retrieve(self, query: int) -> str:
        return ""

    def reset(self) -> None: ...


class AsyncRetrieve:
    def ingest(self, message: Message, session: Session) -> None: ...
    async def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None: ...


class RequiredExtra:
    def ingest(self, message: Message, session: Session) -> None: ...
    def retrieve(self, query: str, k: int) -> str:
        return ""

    def reset(self) -> None: ...


class KeywordOnlySession:
    def ingest(self, message: Message, *, session: Session) -> None: ...
    def retrieve(self, query: str) -> str:
        return ""

    def reset(self) -> None: ...


optional_return: BaseMemory = OptionalReturn()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
missing_session: BaseMemory = MissingSession()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
str_message: BaseMemory = StrMessage()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
missing_reset: BaseMemory = MissingReset()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
int_query: BaseMemory = IntQuery()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
async_retrieve: BaseMemory = AsyncRetrieve()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
required_extra: BaseMemory = RequiredExtra()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
keyword_only_session: BaseMemory = KeywordOnlySession()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
not_searchable: SearchableMemory = Plain()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]


def keyword_call(memory: BaseMemory) -> str:
    # Callers must pass arguments positionally: the protocol's names are not part of it.
    return memory.retrieve(query="hi")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]

"""The null baseline: remembers nothing."""

from __future__ import annotations

from himga.data.schema import Message, Session

__all__ = ["NullMemory"]


class NullMemory:
    """A memory that stores nothing and always retrieves ``""``.

    The lower bound of every table: an agent answering from the question alone.
    Conforms to :class:`~himga.memory.BaseMemory` structurally, without inheriting.
    """

    def ingest(self, message: Message, session: Session, /) -> None:
        """Discard the message."""

    def retrieve(self, query: str, /) -> str:
        """Always ``""``."""
        return ""

    def reset(self) -> None:
        """Nothing to forget."""

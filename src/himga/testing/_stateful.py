"""A Hypothesis state machine: two memories driven side by side against a model of them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from himga.data.schema import Message, Session
from himga.testing._check import query_specs, resolve_query
from himga.testing._contracts import CONTRACTS
from himga.testing._harness import Harness
from himga.testing._strategies import sessions, texts

__all__ = ["MemoryStateMachine", "memory_state_machine"]

_BEHAVIOURAL = frozenset(contract.id for contract in CONTRACTS) - {"protocol-shape"}
_WHICH = st.integers(min_value=0, max_value=1)


class MemoryStateMachine(RuleBasedStateMachine):
    """Interleaves ingest / retrieve / reset on two instances of ``factory``.

    The model is what each instance ingested since its last reset (planted
    canary tokens included); every retrieve is checked against it for all
    behavioural contracts, and a violation is raised as
    :class:`~himga.testing.ContractViolation` under the id it breaks. Get a
    concrete machine with :func:`memory_state_machine`.
    """

    factory: ClassVar[Callable[[], Any]]

    def __init__(self) -> None:
        super().__init__()
        factory = inspect.getattr_static(type(self), "factory")
        if isinstance(factory, staticmethod):
            factory = factory.__func__
        self.harness = Harness(factory, _BEHAVIOURAL)
        self.harness.new_instance()
        self.harness.new_instance()

    @rule(
        which=_WHICH,
        role=st.sampled_from(["user", "assistant"]),
        text=texts(),
        session=sessions(max_messages=1),
    )
    def ingest(self, which: int, role: str, text: str, session: Session) -> None:
        content = f"{text} {self.harness.new_canary(which)}"
        self.harness.ingest(which, Message(role=role, content=content), session)

    @rule(which=_WHICH, query=query_specs() | query_specs(blank=True))
    def retrieve(self, which: int, query: tuple[str, Any]) -> None:
        self.harness.retrieve(which, resolve_query(self.harness, query))

    @rule(which=_WHICH)
    def reset(self, which: int) -> None:
        self.harness.reset(which)


def memory_state_machine(factory: Callable[[], Any]) -> type[MemoryStateMachine]:
    """A :class:`MemoryStateMachine` for ``factory``, ready for ``run_state_machine_as_test``.

    Its ``TestCase`` attribute is a unittest class pytest collects when assigned
    to a ``Test...`` name in a test module.
    """
    name = getattr(factory, "__name__", "memory")
    return type(
        f"MemoryStateMachine_{name}",
        (MemoryStateMachine,),
        {"factory": staticmethod(factory), "__module__": __name__},
    )

"""A Hypothesis state machine: two memories driven side by side against a model of them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from himga.testing._check import check_shape
from himga.testing._contracts import CONTRACTS, ContractViolation
from himga.testing._harness import Harness
from himga.testing._programs import (
    Op,
    execute,
    finish_isolation,
    ingest_op,
    minimise,
    query_specs,
    search_k,
)

__all__ = ["MemoryStateMachine", "memory_state_machine"]

_BEHAVIOURAL = frozenset(contract.id for contract in CONTRACTS) - {"protocol-shape"}
_WHICH = st.integers(min_value=0, max_value=1)
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate)


class MemoryStateMachine(RuleBasedStateMachine):
    """Interleaves ingest / retrieve / search / reset on two instances of ``factory``.

    The model is what each instance ingested since its last reset (planted
    canary tokens included); every output is checked against it for all
    behavioural contracts, and ``protocol-shape`` is checked before the first
    rule. Every failure is raised as :class:`~himga.testing.ContractViolation`
    under the id it breaks, never as a Hypothesis ``Flaky`` error:

    * every rule draws its data whatever the memory does: after a violation
      the remaining steps still draw, run nothing, and the violation is raised
      at teardown, so no draw depends on a memory's output;
    * the first violation is minimised by replaying it on fresh instances
      (saying so when it does not replay: state outside the instances) and
      becomes the machine's verdict, raised by every later run of the class, so
      Hypothesis' shrinking and final replay always see the same failure.

    Get a concrete machine with :func:`memory_state_machine`.
    """

    factory: ClassVar[Callable[[], Any]]
    deterministic: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self._ops: list[Op] = []
        self._violation: ContractViolation | None = type(self).__dict__.get("_verdict")
        self.harness: Harness | None = None
        if self._violation is None:
            try:
                check_shape(self._factory())
            except ContractViolation as violation:
                self._violation = violation
            else:
                self.harness = self._new_harness()

    @classmethod
    def _factory(cls) -> Callable[[], Any]:
        factory = inspect.getattr_static(cls, "factory")
        return factory.__func__ if isinstance(factory, staticmethod) else factory

    def _new_harness(self) -> Harness:
        harness = Harness(self._factory(), _BEHAVIOURAL, deterministic=self.deterministic)
        harness.new_instance()
        harness.new_instance()
        return harness

    @rule(op=ingest_op(_WHICH))
    def ingest(self, op: Op) -> None:
        self._step(op)

    @rule(which=_WHICH, query=query_specs() | query_specs(blank=True))
    def retrieve(self, which: int, query: tuple[str, Any]) -> None:
        self._step(("retrieve", which, query))

    @rule(which=_WHICH, query=query_specs() | query_specs(blank=True), k=search_k())
    def search(self, which: int, query: tuple[str, Any], k: int) -> None:
        self._step(("search", which, query, k))

    @rule(which=_WHICH)
    def reset(self, which: int) -> None:
        self._step(("reset", which))

    def _step(self, op: Op) -> None:
        if self._violation is not None or self.harness is None:
            return  # keep drawing, run nothing: the draws never depend on the memory
        self._ops.append(op)
        try:
            execute(self.harness, [op], plant=True)
        except ContractViolation as violation:
            self._violation = violation

    def _run(self, ops: list[Op]) -> None:
        harness = self._new_harness()
        execute(harness, ops, plant=True)
        _finish(harness, ops)

    def teardown(self) -> None:
        if self._violation is None and self.harness is not None:
            try:
                _finish(self.harness, self._ops)
            except ContractViolation as violation:
                self._violation = violation
        if self._violation is None:
            return
        verdict = type(self).__dict__.get("_verdict")
        if verdict is None:
            verdict = self._violation
            if verdict.reproducer:  # protocol-shape is found without running anything
                verdict = minimise(self._run, self._ops, verdict)
            type(self)._verdict = verdict
        raise ContractViolation(
            verdict.contract_id, verdict.problem, verdict.reproducer
        ) from verdict.__cause__


def _finish(harness: Harness, ops: list[Op]) -> None:
    """Probe, replay (deterministic), then ingest the same ids anew where reset, and again."""
    finish_isolation(harness)
    reset = [index for index, resets in enumerate(harness.resets) if resets]
    for index in reset:
        mine = [op for op in ops if op[0] == "ingest" and op[1] == index]
        execute(harness, mine, plant=True, only=index)
    if reset:
        finish_isolation(harness)


def memory_state_machine(
    factory: Callable[[], Any], *, deterministic: bool = False
) -> type[MemoryStateMachine]:
    """A :class:`MemoryStateMachine` for ``factory``, ready for ``run_state_machine_as_test``.

    ``deterministic=True`` adds the replay checks of ``check_memory``'s option.
    Its ``TestCase`` attribute is a unittest class pytest collects when assigned
    to a ``Test...`` name in a test module. Unless ``run_state_machine_as_test``
    is given other settings, steps have no deadline and Hypothesis' shrink and
    explain phases are off: the machine minimises its verdict itself.
    """
    name = getattr(factory, "__name__", "memory")
    machine = type(
        f"MemoryStateMachine_{name}",
        (MemoryStateMachine,),
        {"factory": staticmethod(factory), "deterministic": deterministic, "__module__": __name__},
    )
    # The machine minimises its verdict itself: Hypothesis' shrink and explain phases
    # would only replay the same verdict, hundreds of times.
    return settings(deadline=None, phases=_PHASES)(machine)

"""The state machine drives two instances against a model and names the broken contract.

Its verdicts must not depend on luck: the broken memories are run with a fixed
seed (``derandomize``), and the machine itself turns every failure, including
one that does not replay, into a ``ContractViolation``.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from himga.memory import KeywordMemory, NullMemory
from himga.testing import ContractViolation, memory_state_machine
from tests.mutants import BROKEN, BROKEN_IF_DETERMINISTIC, LEGAL

TestListMemoryMachine = memory_state_machine(LEGAL["ListMemory"]).TestCase
TestListMemoryMachine.settings = settings(max_examples=10, stateful_step_count=20, deadline=None)

# Fixed: the same programs on every run and every --hypothesis-seed.
FIXED = settings(
    max_examples=30,
    stateful_step_count=20,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.generate],
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["NullMemory", "SimpleKeywordMemory", "RandomSampleMemory", "SearchableListMemory"]
)
def test_legal_memories_satisfy_the_model(name: str) -> None:
    factory = NullMemory if name == "NullMemory" else LEGAL[name]
    run_state_machine_as_test(memory_state_machine(factory), settings=FIXED)


def test_a_searchable_reference_memory_satisfies_the_deterministic_model() -> None:
    machine = memory_state_machine(KeywordMemory, deterministic=True)
    run_state_machine_as_test(machine, settings=FIXED)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_memories_break_the_model_under_their_id(name: str) -> None:
    factory, contract_id = BROKEN[name]
    with pytest.raises(ContractViolation) as caught:
        run_state_machine_as_test(memory_state_machine(factory), settings=FIXED)
    assert caught.value.contract_id == contract_id, str(caught.value)


@pytest.mark.parametrize("name", sorted(BROKEN_IF_DETERMINISTIC))
def test_the_deterministic_machine_catches_what_only_determinism_forbids(name: str) -> None:
    factory, contract_id = BROKEN_IF_DETERMINISTIC[name]
    machine = memory_state_machine(factory, deterministic=True)
    with pytest.raises(ContractViolation) as caught:
        run_state_machine_as_test(machine, settings=FIXED)
    assert caught.value.contract_id == contract_id, str(caught.value)


@pytest.mark.parametrize("name", ["ClassLevelList", "ModuleLevelStore", "MutableDefault"])
def test_state_outside_the_instances_gives_a_violation_never_a_flaky_error(name: str) -> None:
    # These keep state between runs: Hypothesis' replays see another memory each time.
    factory, contract_id = BROKEN[name]
    machine = memory_state_machine(factory)
    for _ in range(2):  # the machine's verdict is the same on every later run
        with pytest.raises(ContractViolation) as caught:
            run_state_machine_as_test(machine, settings=FIXED)
        assert caught.value.contract_id == contract_id, str(caught.value)


def test_protocol_shape_is_checked_before_the_first_rule() -> None:
    with pytest.raises(ContractViolation) as caught:
        run_state_machine_as_test(memory_state_machine(BROKEN["AsyncRetrieve"][0]))
    assert caught.value.contract_id == "protocol-shape"
    assert caught.value.reproducer == ""

"""The state machine drives two instances against a model and names the broken contract."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from himga.memory import NullMemory
from himga.testing import ContractViolation, memory_state_machine
from tests.mutants import BROKEN, LEGAL

TestListMemoryMachine = memory_state_machine(LEGAL["ListMemory"]).TestCase


@pytest.mark.parametrize("name", ["NullMemory", "SimpleKeywordMemory", "RandomSampleMemory"])
def test_legal_memories_satisfy_the_model(name: str) -> None:
    factory = NullMemory if name == "NullMemory" else LEGAL[name]
    run_state_machine_as_test(memory_state_machine(factory))


@pytest.mark.parametrize(
    "name",
    [
        "ClassLevelList",
        "MutableDefault",
        "ModuleLevelStore",
        "ResetOnlyHides",
        "ResetKeepsLast",
        "ResetBreaksObject",
        "ReturnsNone",
        "CrashesOnBlankQuery",
        "CrashesOnNonAscii",
    ],
)
def test_broken_memories_break_the_model_under_their_id(name: str) -> None:
    factory, contract_id = BROKEN[name]
    with pytest.raises(ContractViolation) as caught:
        run_state_machine_as_test(
            memory_state_machine(factory),
            settings=settings(
                max_examples=200, stateful_step_count=30, deadline=None, report_multiple_bugs=False
            ),
        )
    assert caught.value.contract_id == contract_id, str(caught.value)

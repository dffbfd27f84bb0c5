"""MemoryContract gives one test per contract and refuses silent opt-outs."""

from __future__ import annotations

from typing import Any

import pytest

from himga.memory import NullMemory
from himga.testing import CONTRACTS, ContractViolation, MemoryContract
from tests.mutants import (
    BROKEN,
    BROKEN_IF_DETERMINISTIC,
    ListMemory,
    SearchableListMemory,
    SimpleKeywordMemory,
)


class TestNullMemoryContract(MemoryContract):
    factory = NullMemory


class TestListMemoryContract(MemoryContract):
    factory = ListMemory


def _make_keyword_memory() -> SimpleKeywordMemory:
    return SimpleKeywordMemory()


class TestSearchableContract(MemoryContract):
    factory = SearchableListMemory
    deterministic = True


class TestFunctionFactoryContract(MemoryContract):
    # A plain function as class attribute must not become a bound method.
    factory = _make_keyword_memory
    max_examples = 10


class TestOptedOutContract(MemoryContract):
    factory = BROKEN["ResetOnlyHides"][0]

    @pytest.mark.xfail(reason="reset() only hides lines", raises=ContractViolation, strict=True)
    def test_reset_clears(self) -> None:
        super().test_reset_clears()


def test_one_test_per_contract() -> None:
    tests = sorted(name for name in dir(MemoryContract) if name.startswith("test_"))
    assert tests == sorted("test_" + c.id.replace("-", "_") for c in CONTRACTS)


def test_overriding_a_contract_test_without_xfail_is_rejected() -> None:
    with pytest.raises(TypeError, match="replaces or removes test_reset_clears"):

        class Sneaky(MemoryContract):
            factory = ListMemory

            def test_reset_clears(self) -> None:
                pass


def test_deleting_a_contract_test_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"test_instance_isolation.*'instance-isolation'"):

        class Sneaky(MemoryContract):
            factory = ListMemory
            test_instance_isolation = None  # type: ignore[assignment]


@pytest.mark.integration
def test_replacing_the_shared_check_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"must not replace MemoryContract\._check"):

        class Sneaky(MemoryContract):
            factory = ListMemory

            def _check(self, contract_id: str) -> None:
                pass


def test_xfail_without_reason_is_rejected() -> None:
    with pytest.raises(TypeError, match="test_reuse_after_reset"):

        class Sneaky(MemoryContract):
            factory = ListMemory

            @pytest.mark.xfail
            def test_reuse_after_reset(self) -> None:
                pass


@pytest.mark.parametrize("name", ["ClassLevelList", "ReturnsNone", "MissingReset"])
def test_contract_tests_fail_for_broken_memories(name: str) -> None:
    factory, contract_id = BROKEN[name]
    suite: type[Any] = type(f"Test{name}", (MemoryContract,), {"factory": staticmethod(factory)})
    test = getattr(suite(), "test_" + contract_id.replace("-", "_"))
    with pytest.raises(ContractViolation) as caught:
        test()
    assert caught.value.contract_id == contract_id


def test_missing_factory_is_a_clear_error() -> None:
    class NoFactory(MemoryContract):
        pass

    with pytest.raises(TypeError, match="must set factory"):
        NoFactory().test_protocol_shape()


def test_one_root_cause_fails_one_test_and_skips_the_others() -> None:
    class Proxy:  # a fresh factory, so no other test has reported on it
        def __init__(self) -> None:
            self._inner = BROKEN["MissingReset"][0]()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    suite: type[Any] = type("TestProxy", (MemoryContract,), {"factory": Proxy})
    with pytest.raises(ContractViolation, match="reset: missing"):
        suite().test_protocol_shape()
    with pytest.raises(pytest.skip.Exception, match="protocol-shape fails first"):
        suite().test_reset_clears()


def test_the_deterministic_flag_is_honoured() -> None:
    suite: type[Any] = type(
        "TestShared",
        (MemoryContract,),
        {"factory": BROKEN_IF_DETERMINISTIC["SharedCounter"][0], "deterministic": True},
    )
    with pytest.raises(ContractViolation) as caught:
        suite().test_instance_isolation()
    assert "deterministic=True" in caught.value.problem

"""``MemoryContract``: a pytest base class giving one test per contract."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import settings

from himga.testing._check import check_contract
from himga.testing._contracts import CONTRACTS

__all__ = ["MemoryContract"]


def _test_name(contract_id: str) -> str:
    return "test_" + contract_id.replace("-", "_")


def _explicit_xfail(member: object) -> bool:
    marks = getattr(member, "pytestmark", [])
    return any(
        getattr(mark, "name", None) == "xfail" and str(mark.kwargs.get("reason", "")).strip()
        for mark in marks
    )


class MemoryContract:
    """Subclass this in your test suite (name it ``Test...``) and set ``factory``.

    Each contract of :data:`~himga.testing.CONTRACTS` becomes one test,
    ``test_<contract id with underscores>``. ``max_examples`` defaults to the
    ``max_examples`` of the Hypothesis profile in force when the test runs.

    Opting out of a contract must be explicit: a subclass that replaces or
    removes a contract test without ``@pytest.mark.xfail(reason=...)``, or
    replaces the ``_check`` they all run through, is rejected with a
    ``TypeError`` when the class is defined.
    """

    factory: ClassVar[Callable[[], Any]]
    max_examples: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.getattr_static(cls, "_check") is not MemoryContract.__dict__["_check"]:
            # Every contract test runs through _check: replacing it opts out of them all.
            raise TypeError(f"{cls.__qualname__} must not replace MemoryContract._check")
        for contract in CONTRACTS:
            name = _test_name(contract.id)
            member = inspect.getattr_static(cls, name, None)
            if member is MemoryContract.__dict__[name] or _explicit_xfail(member):
                continue
            raise TypeError(
                f"{cls.__qualname__} replaces or removes {name} (contract {contract.id!r}); "
                f"to opt out of a contract, override it with "
                f"@pytest.mark.xfail(reason='why this memory breaks {contract.id}')"
            )

    def _check(self, contract_id: str) -> None:
        factory = inspect.getattr_static(type(self), "factory", None)
        if factory is None:
            raise TypeError(f"{type(self).__qualname__} must set factory = <memory factory>")
        if isinstance(factory, staticmethod):
            factory = factory.__func__
        # settings() inherits from the profile loaded by the caller's test configuration.
        examples = self.max_examples if self.max_examples is not None else settings().max_examples
        check_contract(factory, contract_id, max_examples=examples)

    def test_protocol_shape(self) -> None:
        self._check("protocol-shape")

    def test_retrieve_returns_str(self) -> None:
        self._check("retrieve-returns-str")

    def test_retrieve_empty_query(self) -> None:
        self._check("retrieve-empty-query")

    def test_reset_clears(self) -> None:
        self._check("reset-clears")

    def test_reuse_after_reset(self) -> None:
        self._check("reuse-after-reset")

    def test_instance_isolation(self) -> None:
        self._check("instance-isolation")

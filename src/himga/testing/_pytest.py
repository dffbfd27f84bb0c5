"""``MemoryContract``: a pytest base class giving one test per contract."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import settings

from himga.testing._contracts import CONTRACTS, KIT_MEMORY_TIMEOUT
from himga.testing._outcomes import ContractChecker

__all__ = ["MemoryContract", "run_contract_test"]

# Per factory and settings, the checker whose outcomes its contract tests report.
_CHECKERS: dict[Any, ContractChecker] = {}


def run_contract_test(
    factory: Callable[[], Any],
    contract_id: str,
    *,
    test: str,
    max_examples: int | None = None,
    deterministic: bool = False,
    timeout: float | None = KIT_MEMORY_TIMEOUT,
) -> None:
    """Report one contract's outcome as the pytest test named ``test``, as ``himga check``
    prints it (both read :class:`~himga.testing._outcomes.ContractChecker`).

    ``max_examples`` and ``derandomize`` follow the active Hypothesis profile
    (and ``--hypothesis-seed`` the seed); each memory call may take ``timeout``
    seconds (``None``: no deadline). A failing contract raises its
    :class:`ContractViolation`; one another contract's failure kept from being
    checked (``skip``), and ``search-returns-hits`` for a memory without
    ``search`` (``n/a``), are skipped with the reason.
    """
    import pytest  # only ever called from a test run

    profile = settings()
    examples = max_examples if max_examples is not None else profile.max_examples
    key = (_key(factory), examples, profile.derandomize, deterministic, timeout)
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = _CHECKERS[key] = ContractChecker(
            factory,
            max_examples=examples,
            derandomize=profile.derandomize,
            deterministic=deterministic,
            timeout=timeout,
        )
    outcome = checker.outcome(contract_id)
    if outcome.violation is not None:
        raise outcome.violation
    if outcome.status == "n/a":
        pytest.skip(f"n/a: {outcome.reason}")
    if outcome.status == "skip":
        pytest.skip(outcome.reason)


def _key(factory: Callable[[], Any]) -> Any:
    try:
        hash(factory)
    except TypeError:
        return id(factory)
    return factory


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
    ``max_examples`` of the Hypothesis profile in force when the test runs, whose
    ``derandomize`` (and pytest's ``--hypothesis-seed``) apply too. Set
    ``deterministic = True`` for a memory that promises equal outputs for equal
    call histories. Each memory call may take ``memory_timeout`` seconds
    (``None``: no deadline); a call still running then fails the contract under
    check. The outcomes are ``himga check``'s: one root cause fails one test (the
    contract it breaks; a test another contract's failure kept from being checked
    is skipped, naming it), and ``search-returns-hits`` is skipped as n/a for a
    memory without ``search``.

    Opting out of a contract must be explicit: a subclass that replaces or
    removes a contract test without ``@pytest.mark.xfail(reason=...)``, or
    replaces the ``_check`` they all run through, is rejected with a
    ``TypeError`` when the class is defined.
    """

    factory: ClassVar[Callable[[], Any]]
    max_examples: ClassVar[int | None] = None
    deterministic: ClassVar[bool] = False
    memory_timeout: ClassVar[float | None] = KIT_MEMORY_TIMEOUT

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
        run_contract_test(
            factory,
            contract_id,
            test=f"{type(self).__qualname__}.{_test_name(contract_id)}",
            max_examples=self.max_examples,
            deterministic=self.deterministic,
            timeout=self.memory_timeout,
        )

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

    def test_search_returns_hits(self) -> None:
        self._check("search-returns-hits")

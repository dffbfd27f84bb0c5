"""Each contract's outcome on one memory: what ``himga check`` prints and the pytest plugin reports.

One place decides, so the command and the plugin never disagree on which
contract a memory breaks or which ones do not apply.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from typing_extensions import Unpack

from himga.memory._protocol import SearchableMemory
from himga.testing._check import CheckSettings, check_contract
from himga.testing._contracts import ContractViolation
from himga.testing._harness import SEARCH

__all__ = ["ContractChecker", "ContractOutcome", "Status"]

Status = Literal["pass", "fail", "skip", "n/a"]


@dataclass(frozen=True)
class ContractOutcome:
    """One contract on one memory: ``status``, the ``violation`` when it fails, why it was
    not checked when ``skip`` or ``n/a`` (``reason``; for ``skip``, ``blocked_by`` is the
    contract that fails first), and the ``seconds`` its check took."""

    contract_id: str
    status: Status
    violation: ContractViolation | None = None
    reason: str = ""
    blocked_by: str | None = None
    seconds: float = 0.0


class ContractChecker:
    """Checks the contracts of one memory factory, each at most once, and says each outcome.

    One root cause fails one contract: checking contract A may uncover a
    violation of B (a crash is blamed on the contract it breaks). B then fails
    with it -- when asked, without being checked again -- and A is ``skip``
    (not checked: B fails first); if B's outcome was already given and was not a
    failure, A fails with B's violation instead, so it is never lost. ``search-returns-hits`` is
    ``n/a`` for a memory without ``search``. The settings are those of
    :func:`~himga.testing.check_contract`.
    """

    def __init__(self, factory: Callable[[], Any], **settings: Unpack[CheckSettings]) -> None:
        self._factory = factory
        self._settings = settings
        self._found: dict[str, ContractViolation] = {}
        self._outcomes: dict[str, ContractOutcome] = {}

    @property
    def found(self) -> dict[str, ContractViolation]:
        """Every violation found so far, by the contract it breaks."""
        return dict(self._found)

    def outcome(self, contract_id: str) -> ContractOutcome:
        """The outcome of ``contract_id``, checking it first if it is not known yet."""
        known = self._outcomes.get(contract_id)
        if known is None:
            known = self._outcomes[contract_id] = self._decide(contract_id)
        return known

    def _decide(self, contract_id: str) -> ContractOutcome:
        found = self._found.get(contract_id)
        if found is not None:
            return ContractOutcome(contract_id, "fail", found)
        start = time.perf_counter()
        try:
            check_contract(self._factory, contract_id, **self._settings)
        except ContractViolation as violation:
            seconds = time.perf_counter() - start
            blamed = violation.contract_id
            self._found.setdefault(blamed, violation)
            prior = self._outcomes.get(blamed)
            if blamed == contract_id or (prior is not None and prior.status != "fail"):
                return ContractOutcome(contract_id, "fail", violation, seconds=seconds)
            reason = f"not checked: {blamed} fails first"
            return ContractOutcome(contract_id, "skip", None, reason, blamed, seconds)
        seconds = time.perf_counter() - start
        if contract_id == SEARCH and not self._searchable():  # checked nothing: not a pass
            return ContractOutcome(contract_id, "n/a", None, "the memory has no search method")
        return ContractOutcome(contract_id, "pass", seconds=seconds)

    def _searchable(self) -> bool:
        try:
            return isinstance(self._factory(), SearchableMemory)
        except KeyboardInterrupt:
            raise
        except BaseException:  # SystemExit too: reported by protocol-shape
            return False

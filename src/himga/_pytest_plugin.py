"""The pytest plugin of the conformance kit: ``pytest --himga-memory SPEC``.

Registered under the ``pytest11`` entry point, so pytest loads it wherever himga
is installed; it stays inert unless ``--himga-memory`` is given. It lives outside
:mod:`himga.testing` so that loading it never needs Hypothesis (the ``testing``
extra), which is required only once a memory is to be checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["ContractItem", "MemoryUnderCheck"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("himga", "himga conformance kit")
    group.addoption(
        "--himga-memory",
        action="append",
        default=[],
        metavar="MODULE:ATTR|NAME",
        help="check this memory factory (module:attr, or a registered name): one test per "
        "contract of himga.testing; repeatable",
    )
    group.addoption(
        "--himga-memory-timeout",
        type=_memory_timeout,
        default=_KIT_DEFAULT,
        metavar="S|none",
        help="fail the contract under check when a memory call has not returned after S "
        "seconds (per call; default: himga.testing.KIT_MEMORY_TIMEOUT, 120; 'none': no "
        "deadline)",
    )
    group.addoption(
        "--himga-deterministic",
        action="store_true",
        help="the memories checked with --himga-memory promise equal outputs for equal "
        "call histories: check that too",
    )


def _memory_timeout(text: str) -> float | None:
    from himga.eval._memory_calls import memory_timeout_argument

    return memory_timeout_argument(text)


# The default of --himga-memory-timeout: the kit's, read only once a memory is checked
# (reading it when pytest starts would import himga.testing in every test run).
_KIT_DEFAULT = object()


class MemoryUnderCheck(pytest.Collector):
    """The contract tests of one ``--himga-memory`` spec."""

    def __init__(self, *, factory: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.factory = factory

    def collect(self) -> list[pytest.Item]:
        from himga.testing import CONTRACTS

        return [
            ContractItem.from_parent(self, name=contract.id, contract_id=contract.id)
            for contract in CONTRACTS
        ]


class ContractItem(pytest.Item):
    """One contract checked on the parent's memory factory."""

    def __init__(self, *, contract_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.contract_id = contract_id

    def runtest(self) -> None:
        from himga.testing._pytest import run_contract_test

        parent = self.parent
        assert isinstance(parent, MemoryUnderCheck)
        from himga.testing import KIT_MEMORY_TIMEOUT

        given = self.config.getoption("himga_memory_timeout")
        run_contract_test(
            parent.factory,
            self.contract_id,
            test=self.nodeid,
            deterministic=bool(self.config.getoption("himga_deterministic")),
            timeout=KIT_MEMORY_TIMEOUT if given is _KIT_DEFAULT else given,
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from himga.testing import ContractViolation

        if isinstance(excinfo.value, ContractViolation):
            return str(excinfo.value)  # the problem and the runnable reproducer say it all
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.parent.name if self.parent else "", None, f"contract {self.contract_id}"


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect, so they apply to these items too
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    specs: list[str] = config.getoption("himga_memory")
    if not specs:
        return
    from himga._extras import MissingExtraError, require

    try:
        require("hypothesis", extra="testing", purpose="pytest --himga-memory")
    except MissingExtraError as exc:
        raise pytest.UsageError(str(exc)) from exc
    from himga._registry import cwd_importable
    from himga.memory import MemoryLoadError, load_memory

    # Like `python -m` and `himga check`, resolve module:attr specs against the
    # directory pytest runs in.
    cwd_importable()
    for spec in specs:
        try:
            factory = load_memory(spec)
        except MemoryLoadError as exc:
            raise pytest.UsageError(f"--himga-memory {spec}: {exc}") from exc
        collector = MemoryUnderCheck.from_parent(session, name=f"himga[{spec}]", factory=factory)
        items.extend(collector.collect())

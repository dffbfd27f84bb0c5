"""``check_memory`` / ``check_contract``: run the contracts on a memory factory with Hypothesis."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypedDict

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as fixed_seed
from hypothesis.errors import Flaky

from himga.memory._protocol import SearchableMemory
from himga.testing._contracts import (
    CONTRACTS,
    DEFAULT_MAX_EXAMPLES,
    KIT_MEMORY_TIMEOUT,
    ContractViolation,
    check_protocol_shape,
)
from himga.testing._deadline import MemoryHung, with_deadline
from himga.testing._harness import SEARCH
from himga.testing._programs import NOT_REPLAYED, Op, minimise, program

__all__ = ["CheckSettings", "check_contract", "check_memory"]
PROTOCOL_SHAPE = "protocol-shape"


class CheckSettings(TypedDict, total=False):
    """The keyword settings of :func:`check_contract`, for callers that pass them on."""

    max_examples: int
    derandomize: bool
    deterministic: bool
    seed: int | None
    timeout: float | None
    max_text_chars: int | None


def _settings(max_examples: int, derandomize: bool) -> settings:
    # Every field that matters is explicit, so whichever profile the caller's test
    # suite loaded does not change what the kit checks.
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=derandomize,
        database=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
    )


def check_shape(factory: Callable[[], Any]) -> Any:
    """A fresh instance from ``factory`` if it has the protocol's shape, else the violation.

    The shape is read on an instance (methods bound in ``__init__`` and
    ``__getattr__`` proxies count); no memory method is called.
    """
    try:
        instance = factory()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit (sys.exit) too: the factory's failure
        raise ContractViolation(
            PROTOCOL_SHAPE, f"factory() raised {type(exc).__name__}: {exc}"
        ) from exc
    problems = check_protocol_shape(instance)
    if problems:
        raise ContractViolation(PROTOCOL_SHAPE, "; ".join(problems))
    return instance


def check_contract(
    factory: Callable[[], Any],
    contract_id: str,
    *,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    derandomize: bool = False,
    deterministic: bool = False,
    seed: int | None = None,
    timeout: float | None = KIT_MEMORY_TIMEOUT,
    max_text_chars: int | None = None,
) -> None:
    """Check one contract; raise :class:`ContractViolation` if ``factory``'s memories break it.

    ``protocol-shape`` is always checked first, on an instance and without
    calling any of its methods: a behavioural contract cannot be checked on a
    memory of the wrong shape, so that raises the ``protocol-shape``
    violation. Behavioural contracts run up to ``max_examples`` generated
    programs; a violation carries the minimal one as a runnable reproducer.
    ``search-returns-hits`` passes at once for a memory without ``search``.

    ``deterministic=True`` also demands that equal call histories give equal
    outputs (for memories that promise it). ``derandomize=True`` makes the
    search repeatable; ``seed`` fixes its random seed instead.

    Each memory call may take ``timeout`` seconds (``None``: no deadline); a call
    still running then breaks the contract under check at once, its reproducer
    ending with that call, unshrunk (each replay would wait the deadline out).

    ``max_text_chars`` cuts every generated text (contents and queries) to that
    many characters: pre-flight's bound for memories that embed
    (:data:`~himga.testing.EMBED_TEXT_CHARS`); ``None`` keeps the very long ones.
    """
    if contract_id not in {contract.id for contract in CONTRACTS}:
        known = ", ".join(contract.id for contract in CONTRACTS)
        raise ValueError(f"unknown contract id {contract_id!r} (known: {known})")
    instance = check_shape(factory)
    if contract_id == PROTOCOL_SHAPE:
        return
    if contract_id == SEARCH and not isinstance(instance, SearchableMemory):
        return
    timed = factory if timeout is None else with_deadline(factory, timeout)
    try:
        _check_behaviour(
            timed, contract_id, max_examples, derandomize, deterministic, seed, max_text_chars
        )
    except MemoryHung as hung:
        raise hung.violation or ContractViolation(contract_id, str(hung)) from None


def _check_behaviour(
    factory: Callable[[], Any],
    contract_id: str,
    max_examples: int,
    derandomize: bool,
    deterministic: bool,
    seed: int | None,
    max_text_chars: int | None,
) -> None:
    body, ops_strategy = program(contract_id, max_text_chars)
    failing: list[list[Op]] = []

    # Built per call: a @given function shared between callers (say, two
    # MemoryContract subclasses) would trip Hypothesis' differing_executors check.
    @_settings(max_examples, derandomize)
    @given(ops=ops_strategy)
    def run(ops: list[Op]) -> None:
        try:
            body(factory, ops, deterministic)
        except ContractViolation:
            failing.append(ops)
            raise

    if seed is not None:
        run = fixed_seed(seed)(run)
    found: ContractViolation | None = None
    flaky: Flaky | None = None
    try:
        run()
    except ContractViolation as violation:
        found = violation
    except Flaky as exc:
        flaky = exc
    # Minimised and raised outside the except blocks: the report then chains only
    # the memory's own exception, never the longer program Hypothesis replayed.
    if found is not None:
        minimal = minimise(lambda ops: body(factory, ops, deterministic), failing[-1], found)
        raise minimal from minimal.__cause__
    if flaky is not None:
        raise _not_reproducible(contract_id, flaky) from flaky


def _not_reproducible(contract_id: str, exc: Flaky) -> ContractViolation:
    failures: Iterable[BaseException] = getattr(exc, "exceptions", ())
    first = next((e for e in failures if isinstance(e, ContractViolation)), None)
    if first is None:
        return ContractViolation(contract_id, NOT_REPLAYED)
    # Blamed like any failure: on the contract the first failure broke.
    problem = f"{NOT_REPLAYED}: {first.problem}"
    return ContractViolation(first.contract_id, problem, first.reproducer)


def check_memory(
    factory: Callable[[], Any],
    *,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    derandomize: bool = False,
    deterministic: bool = False,
    seed: int | None = None,
    timeout: float | None = KIT_MEMORY_TIMEOUT,
    max_text_chars: int | None = None,
) -> None:
    """Check every contract of :data:`CONTRACTS`, in order, against ``factory``.

    ``factory`` is any zero-argument callable returning a fresh memory (a class
    works). Raises :class:`ContractViolation` for the first contract broken,
    naming its id and the minimal program reproducing it. Demands neither
    deterministic nor relevant output unless ``deterministic=True``;
    ``max_text_chars`` as in :func:`check_contract`.
    """
    for contract in CONTRACTS:
        check_contract(
            factory,
            contract.id,
            max_examples=max_examples,
            derandomize=derandomize,
            deterministic=deterministic,
            seed=seed,
            timeout=timeout,
            max_text_chars=max_text_chars,
        )

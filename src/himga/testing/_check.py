"""``check_memory``: run every contract against a memory factory with Hypothesis."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from himga.data.schema import Message, Session
from himga.testing._contracts import CONTRACTS, ContractViolation, check_protocol_shape
from himga.testing._harness import (
    EMPTY_QUERY,
    ISOLATION,
    RESET_CLEARS,
    RETURNS_STR,
    REUSE,
    Harness,
)
from himga.testing._strategies import blank_texts, sessions, texts

__all__ = ["DEFAULT_MAX_EXAMPLES", "check_contract", "check_memory"]

DEFAULT_MAX_EXAMPLES = 100
PROTOCOL_SHAPE = "protocol-shape"

# An operation of a generated program. Queries are resolved against the run so far:
# ("canary", k) asks for the k-th planted token, ("echo", k) repeats the k-th
# ingested content, ("text", q) is q itself.
_Op = tuple[Any, ...]
_MAX_OPS = 8


def query_specs(blank: bool = False) -> st.SearchStrategy[tuple[str, Any]]:
    """Query specs for :func:`resolve_query`: blank ones, or canary / echo / non-blank text."""
    if blank:
        return st.tuples(st.just("text"), blank_texts())
    k = st.integers(min_value=0, max_value=_MAX_OPS)
    return st.one_of(
        st.tuples(st.just("canary"), k),
        st.tuples(st.just("echo"), k),
        st.tuples(st.just("text"), texts().filter(str.strip)),
    )


def _ops(
    *, instances: int, reset: bool, queries: st.SearchStrategy[tuple[str, Any]]
) -> st.SearchStrategy[list[_Op]]:
    which = st.integers(min_value=0, max_value=instances - 1)
    session = st.integers(min_value=0, max_value=1)
    choices = [
        st.tuples(
            st.just("ingest"), which, st.sampled_from(["user", "assistant"]), texts(), session
        ),
        st.tuples(st.just("retrieve"), which, queries),
    ]
    if reset:
        choices.append(st.tuples(st.just("reset"), which))
    return st.lists(st.one_of(choices), max_size=_MAX_OPS)


_SESSIONS = st.lists(sessions(max_messages=1), min_size=1, max_size=2)
_NON_BLANK = query_specs()
_BLANK = query_specs(blank=True)
# The output checks hold for blank queries too ("" on a fresh memory, no leaks).
_ANY_QUERY = _NON_BLANK | _BLANK


def resolve_query(harness: Harness, spec: tuple[str, Any]) -> str:
    """The query a spec stands for, given what ``harness`` has planted and ingested so far."""
    kind, value = spec
    if kind == "canary":
        return harness.canary(value, fallback="memory")
    if kind == "echo":
        return harness.content(value, fallback="memory")
    text: str = value
    return text


def _execute(harness: Harness, ops: Sequence[_Op], pool: Sequence[Session], *, plant: bool) -> None:
    for op in ops:
        if op[0] == "ingest":
            _, index, role, text, session = op
            content = f"{text} {harness.new_canary(index)}" if plant else text
            harness.ingest(index, Message(role=role, content=content), pool[session % len(pool)])
        elif op[0] == "retrieve":
            harness.retrieve(op[1], resolve_query(harness, op[2]))
        else:
            harness.reset(op[1])


def _probe_canaries(harness: Harness) -> None:
    """Ask every instance for every planted token: leaks show whatever the memory ranks."""
    for index in range(len(harness.memories)):
        for token in harness.canaries or ["memory"]:
            harness.retrieve(index, token)


_Body = Callable[[Callable[[], Any], list[_Op], list[Session]], None]


def _program(contract_id: str) -> tuple[_Body, st.SearchStrategy[list[_Op]]]:
    """The property for one contract and the strategy for its generated operations."""
    if contract_id == RETURNS_STR:
        ops = _ops(instances=1, reset=False, queries=_NON_BLANK)

        def returns_str(factory: Callable[[], Any], ops: list[_Op], pool: list[Session]) -> None:
            harness = Harness(factory, frozenset({RETURNS_STR}))
            harness.new_instance()
            _execute(harness, ops, pool, plant=False)

        return returns_str, ops
    if contract_id == EMPTY_QUERY:
        # No resets here: a crash after a reset is reuse-after-reset's, whose program
        # ends with a blank query after a reset.
        ops = _ops(instances=1, reset=False, queries=_BLANK)

        def empty_query(factory: Callable[[], Any], ops: list[_Op], pool: list[Session]) -> None:
            harness = Harness(factory, frozenset({EMPTY_QUERY}))
            harness.new_instance()
            _execute(harness, ops, pool, plant=False)
            for query in ("", " \t\n"):
                harness.retrieve(0, query)

        return empty_query, ops
    if contract_id == RESET_CLEARS:
        ops = _ops(instances=1, reset=True, queries=_ANY_QUERY)

        def reset_clears(factory: Callable[[], Any], ops: list[_Op], pool: list[Session]) -> None:
            harness = Harness(factory, frozenset({RESET_CLEARS}))
            harness.new_instance()
            _execute(harness, ops, pool, plant=True)
            # Always end with the telling pattern: reset, probe (a blank query too),
            # ingest anew, probe.
            harness.reset(0)
            _probe_canaries(harness)
            harness.retrieve(0, "")
            content = f"after reset {harness.new_canary(0)}"
            harness.ingest(0, Message(role="user", content=content), pool[0])
            _probe_canaries(harness)

        return reset_clears, ops
    if contract_id == REUSE:
        ops = _ops(instances=1, reset=True, queries=_NON_BLANK)

        def reuse(factory: Callable[[], Any], ops: list[_Op], pool: list[Session]) -> None:
            harness = Harness(factory, frozenset({REUSE}))
            harness.new_instance()
            # Prove ingest and retrieve work, reset at least once, prove they still work.
            harness.ingest(0, Message(role="user", content="before reset"), pool[0])
            harness.retrieve(0, "before reset")
            half = len(ops) // 2
            _execute(harness, ops[:half], pool, plant=True)
            harness.reset(0)
            _execute(harness, ops[half:], pool, plant=True)
            harness.ingest(0, Message(role="user", content="after reset"), pool[0])
            harness.retrieve(0, "after reset")
            harness.retrieve(0, "")

        return reuse, ops
    if contract_id == ISOLATION:
        ops = _ops(instances=2, reset=True, queries=_ANY_QUERY)

        def isolation(factory: Callable[[], Any], ops: list[_Op], pool: list[Session]) -> None:
            harness = Harness(factory, frozenset({ISOLATION}))
            harness.new_instance()
            harness.new_instance()
            _execute(harness, ops, pool, plant=True)
            _probe_canaries(harness)

        return isolation, ops
    raise ValueError(f"no behavioural program for contract {contract_id!r}")


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


def check_contract(
    factory: Callable[[], Any],
    contract_id: str,
    *,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    derandomize: bool = False,
) -> None:
    """Check one contract; raise :class:`ContractViolation` if ``factory``'s memories break it.

    ``protocol-shape`` is always checked first (from signatures, calling only
    ``factory`` itself when it is not a class): a behavioural contract cannot be
    checked on a memory of the wrong shape, so that raises the
    ``protocol-shape`` violation. Behavioural contracts run up to
    ``max_examples`` generated call sequences; a violation carries the shrunk
    sequence. ``derandomize=True`` makes the search repeatable.
    """
    if contract_id not in {contract.id for contract in CONTRACTS}:
        known = ", ".join(contract.id for contract in CONTRACTS)
        raise ValueError(f"unknown contract id {contract_id!r} (known: {known})")
    if isinstance(factory, type):
        target: Any = factory
    else:
        try:
            target = factory()
        except Exception as exc:
            raise ContractViolation(
                PROTOCOL_SHAPE, f"factory() raised {type(exc).__name__}: {exc}"
            ) from exc
    problems = check_protocol_shape(target)
    if problems:
        raise ContractViolation(PROTOCOL_SHAPE, "; ".join(problems))
    if contract_id == PROTOCOL_SHAPE:
        return
    body, ops_strategy = _program(contract_id)
    failing: list[tuple[list[_Op], list[Session]]] = []

    # Built per call: a @given function shared between callers (say, two
    # MemoryContract subclasses) would trip Hypothesis' differing_executors check.
    @_settings(max_examples, derandomize)
    @given(ops=ops_strategy, pool=_SESSIONS)
    def run(ops: list[_Op], pool: list[Session]) -> None:
        try:
            body(factory, ops, pool)
        except ContractViolation:
            failing.append((ops, pool))
            raise

    try:
        run()
    except ContractViolation as violation:
        # Hypothesis replays the shrunk example last; finish its shrinking by
        # dropping every operation the violation does not need.
        minimal = _drop_unneeded(body, factory, *failing[-1], violation)
        raise minimal from minimal.__cause__
    except Flaky as exc:
        raise _not_reproducible(contract_id, exc) from exc


def _drop_unneeded(
    body: _Body,
    factory: Callable[[], Any],
    ops: list[_Op],
    pool: list[Session],
    violation: ContractViolation,
) -> ContractViolation:
    index = 0
    while index < len(ops):
        candidate = ops[:index] + ops[index + 1 :]
        try:
            body(factory, candidate, pool)
        except ContractViolation as smaller:
            if smaller.contract_id == violation.contract_id:
                ops, violation = candidate, smaller
                continue
        index += 1
    return violation


def _not_reproducible(contract_id: str, exc: Flaky) -> ContractViolation:
    failures: Iterable[BaseException] = getattr(exc, "exceptions", ())
    first = next((e for e in failures if isinstance(e, ContractViolation)), None)
    if first is None:
        return ContractViolation(contract_id, _NOT_REPLAYED)
    # Blamed like any failure: on the contract the first failure broke.
    return ContractViolation(
        first.contract_id, f"{_NOT_REPLAYED}: {first.problem}", first.reproducer
    )


_NOT_REPLAYED = (
    "failed once but not when the same calls were replayed, so the outcome depends on "
    "something outside the instances under test (class- or module-level state, randomness?)"
)


def check_memory(
    factory: Callable[[], Any],
    *,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    derandomize: bool = False,
) -> None:
    """Check every contract of :data:`CONTRACTS`, in order, against ``factory``.

    ``factory`` is any zero-argument callable returning a fresh memory (a class
    works). Raises :class:`ContractViolation` for the first contract broken,
    naming its id and the minimal (shrunk) sequence of calls reproducing it.
    Does not require deterministic or relevant output.
    """
    for contract in CONTRACTS:
        check_contract(factory, contract.id, max_examples=max_examples, derandomize=derandomize)

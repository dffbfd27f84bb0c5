"""The generated programs: what each contract's check runs, and how a failing one is minimised.

A program is a list of operations drawn in full before anything runs, so no
draw depends on a memory's output or on state outside the run. Operations are
plain tuples:

* ``("ingest", which, role, text, session_id, date_str, turn, plant)``: ``turn``
  is a turn id, ``None`` or an int ``i`` (the LongMemEval id
  ``"<session_id>:<i>"``); ``plant`` names the fields besides the content that
  get a canary in a leak check (``role``, ``session_id``, ``date``, ``turn_id``);
* ``("retrieve", which, query)`` and ``("search", which, query, k)``: ``query``
  is resolved against the run so far (see :func:`resolve_query`);
* ``("reset", which)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from hypothesis import strategies as st

from himga.data.schema import Message, Session
from himga.testing._contracts import ContractViolation
from himga.testing._harness import (
    EMPTY_QUERY,
    ISOLATION,
    RESET_CLEARS,
    RETURNS_STR,
    REUSE,
    SEARCH,
    Harness,
)
from himga.testing._strategies import (
    EVAL_TURN_IDS,
    blank_texts,
    roles,
    session_dates,
    session_ids,
    texts,
)

__all__ = [
    "NOT_REPLAYED",
    "Op",
    "Program",
    "execute",
    "ingest_op",
    "minimise",
    "program",
    "query_specs",
    "resolve_query",
    "search_k",
]

Op = tuple[Any, ...]
_MAX_OPS = 8
PLANTABLE = ("role", "session_id", "date", "turn_id")


def query_specs(
    blank: bool = False, max_chars: int | None = None
) -> st.SearchStrategy[tuple[str, Any]]:
    """Query specs: blank ones, or ``("canary", k)`` (the k-th planted key),
    ``("echo", k)`` (the k-th ingested content) and ``("text", q)`` (``q`` at most
    ``max_chars`` characters when given)."""
    if blank:
        return st.tuples(st.just("text"), blank_texts())
    k = st.integers(min_value=0, max_value=_MAX_OPS)
    return st.one_of(
        st.tuples(st.just("canary"), k),
        st.tuples(st.just("echo"), k),
        st.tuples(st.just("text"), texts(max_chars).filter(str.strip)),
    )


def search_k() -> st.SearchStrategy[int]:
    """``k`` for ``search``: 0, small, and more than any program ingests."""
    return st.sampled_from([0, 1, 2, 5, 1000])


def ingest_op(which: st.SearchStrategy[int], max_chars: int | None = None) -> st.SearchStrategy[Op]:
    """An eval-like ingest: benchmark roles, session ids, dates and turn ids, reused;
    the content at most ``max_chars`` characters when given."""
    turns = st.none() | st.sampled_from(EVAL_TURN_IDS) | st.integers(min_value=0, max_value=2)
    return st.tuples(
        st.just("ingest"),
        which,
        roles(),
        texts(max_chars),
        session_ids(),
        session_dates(),
        turns,
        st.frozensets(st.sampled_from(PLANTABLE)),
    )


def resolve_query(harness: Harness, spec: tuple[str, Any]) -> str:
    """The query a spec stands for, given what ``harness`` has planted and ingested so far."""
    kind, value = spec
    if kind == "canary":
        return harness.canary(value, fallback="memory")
    if kind == "echo":
        return harness.content(value, fallback="memory")
    text: str = value
    return text


def _build(harness: Harness, op: Op, plant: bool, which: int) -> tuple[Message, Session]:
    _, _, role, text, session_id, date_str, turn, fields = op
    turn_id = f"{session_id}:{turn}" if isinstance(turn, int) else turn
    if plant:
        text = f"{text} {harness.new_canary(which)}"
        if "role" in fields:
            role = f"{role} {harness.new_canary(which)}"
        if "session_id" in fields:
            session_id = f"{session_id} {harness.new_canary(which)}"
        if "date" in fields:
            date_str = f"{date_str or ''} {harness.new_canary(which)}".strip()
        if "turn_id" in fields:
            turn_id = f"{turn_id or 'D1:1'}/" + harness.new_canary(which).replace(" ", "/")
    message = Message(role=role, content=text, turn_id=turn_id)
    return message, Session(session_id=session_id, messages=(), date_str=date_str)


def execute(harness: Harness, ops: Sequence[Op], *, plant: bool, only: int | None = None) -> None:
    """Run ``ops`` on ``harness`` (every op on instance ``only`` when given)."""
    for op in ops:
        which = op[1] if only is None else only
        if op[0] == "ingest":
            harness.ingest(which, *_build(harness, op, plant, which))
        elif op[0] == "retrieve":
            harness.retrieve(which, resolve_query(harness, op[2]))
        elif op[0] == "search":
            harness.search(which, resolve_query(harness, op[2]), op[3])
        else:
            harness.reset(which)


def _ops(
    *,
    instances: int,
    reset: bool,
    queries: Literal["non-blank", "blank", "any"],
    max_chars: int | None,
    search: bool = True,
) -> st.SearchStrategy[list[Op]]:
    """``queries``: ``"non-blank"``, ``"blank"`` or ``"any"``."""
    which = st.integers(min_value=0, max_value=instances - 1)
    non_blank = query_specs(max_chars=max_chars)
    blank = query_specs(blank=True)
    spec = {"non-blank": non_blank, "blank": blank, "any": non_blank | blank}[queries]
    # The output checks hold for blank queries too ("" on a fresh memory, no leaks).
    choices = [ingest_op(which, max_chars), st.tuples(st.just("retrieve"), which, spec)]
    if search:
        choices.append(st.tuples(st.just("search"), which, spec, search_k()))
    if reset:
        choices.append(st.tuples(st.just("reset"), which))
    return st.lists(st.one_of(choices), max_size=_MAX_OPS)


# Runs a program: (factory, ops, deterministic) -> None or ContractViolation raised.
Program = Callable[[Callable[[], Any], list[Op], bool], None]


def _plain(text: str) -> list[Op]:
    """Ingest ``text`` (id ``D1:1``) on instance 0 and retrieve it."""
    ingest: Op = ("ingest", 0, "user", text, "session_1", None, "D1:1", frozenset())
    return [ingest, ("retrieve", 0, ("text", text))]


def _reingest(harness: Harness, ops: Sequence[Op]) -> None:
    """Ingest again what ``ops`` ingested (fresh canaries, same ids), as a next sample would."""
    ingests = [op for op in ops if op[0] == "ingest"]
    if not ingests:
        ingests = [("ingest", 0, "user", "after reset", "session_1", None, "D1:1", frozenset())]
    execute(harness, ingests, plant=True, only=0)


def program(
    contract_id: str, max_chars: int | None = None
) -> tuple[Program, st.SearchStrategy[list[Op]]]:
    """The program of one behavioural contract and the strategy for its operations;
    generated texts are at most ``max_chars`` characters when given."""
    if contract_id == RETURNS_STR:

        def returns_str(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(factory, frozenset({RETURNS_STR}), max_chars=max_chars)
            harness.new_instance()
            execute(harness, ops, plant=False)

        return returns_str, _ops(
            instances=1, reset=False, queries="non-blank", max_chars=max_chars, search=False
        )
    if contract_id == EMPTY_QUERY:
        # No resets here: a crash after a reset is reuse-after-reset's, whose program
        # ends with a blank query after a reset.

        def empty_query(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(factory, frozenset({EMPTY_QUERY}), max_chars=max_chars)
            harness.new_instance()
            execute(harness, ops, plant=False)
            for query in ("", " \t\n"):
                harness.retrieve(0, query)

        return empty_query, _ops(
            instances=1, reset=False, queries="blank", max_chars=max_chars, search=False
        )
    if contract_id == RESET_CLEARS:

        def reset_clears(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(
                factory, frozenset({RESET_CLEARS}), deterministic=deterministic, max_chars=max_chars
            )
            harness.new_instance()
            execute(harness, ops, plant=True)
            finish_reset_clears(harness, ops)

        return reset_clears, _ops(instances=1, reset=True, queries="any", max_chars=max_chars)
    if contract_id == REUSE:

        def reuse(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(
                factory, frozenset({REUSE}), deterministic=deterministic, max_chars=max_chars
            )
            harness.new_instance()
            # Prove ingest and retrieve work, reset at least once, prove they still work.
            before: Op = (
                "ingest",
                0,
                "user",
                "before reset",
                "session_1",
                None,
                "D1:1",
                frozenset(),
            )
            execute(harness, [before, ("retrieve", 0, ("text", "before reset"))], plant=False)
            half = len(ops) // 2
            execute(harness, ops[:half], plant=True)
            harness.reset(0)
            execute(harness, ops[half:], plant=True)
            execute(harness, _plain("after reset"), plant=False)
            harness.retrieve(0, "")
            harness.search(0, "after reset", 5)
            harness.check_replay(0)

        return reuse, _ops(instances=1, reset=True, queries="non-blank", max_chars=max_chars)
    if contract_id == ISOLATION:

        def isolation(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(
                factory, frozenset({ISOLATION}), deterministic=deterministic, max_chars=max_chars
            )
            harness.new_instance()
            harness.new_instance()
            execute(harness, ops, plant=True)
            finish_isolation(harness)

        return isolation, _ops(instances=2, reset=True, queries="any", max_chars=max_chars)
    if contract_id == SEARCH:

        def search(factory: Callable[[], Any], ops: list[Op], deterministic: bool) -> None:
            harness = Harness(factory, frozenset({SEARCH}), max_chars=max_chars)
            harness.new_instance()
            execute(harness, ops, plant=True)
            # Every key at once matches every planted turn: the ranking shows.
            every = harness.every_key()
            for query in (every, harness.content(0, "memory"), "", " "):
                for k in (0, 1, 2, 1000):
                    harness.search(0, query, k)

        return search, _ops(instances=1, reset=False, queries="any", max_chars=max_chars)
    raise ValueError(f"no behavioural program for contract {contract_id!r}")


def finish_reset_clears(harness: Harness, ops: Sequence[Op]) -> None:
    """The telling end of a reset check: reset, probe, ingest the same ids anew, probe."""
    harness.reset(0)
    harness.probe()
    harness.retrieve(0, "")
    harness.search(0, "", 5)
    _reingest(harness, ops)
    harness.probe()
    harness.check_replay(0)


def finish_isolation(harness: Harness) -> None:
    """Probe every instance for every planted key, then (deterministic) replay each alone."""
    harness.probe()
    for index in range(len(harness.memories)):
        harness.check_replay(index)


NOT_REPLAYED = (
    "failed once but not when the same calls were replayed, so the outcome depends on "
    "something outside the instances under test (class- or module-level state, randomness?)"
)


def minimise(
    run: Callable[[list[Op]], None], ops: list[Op], violation: ContractViolation
) -> ContractViolation:
    """The violation of the smallest sub-program of ``ops`` still breaking the same contract.

    Runs outside any ``except`` block, so the result chains only the memory's
    own exception. A program that no longer fails on replay keeps the
    violation found first, saying it did not replay.
    """
    replayed = _fails(run, ops, violation.contract_id)
    if replayed is None:
        return _not_replayed(violation)
    index = 0
    while index < len(ops):
        candidate = ops[:index] + ops[index + 1 :]
        smaller = _fails(run, candidate, violation.contract_id)
        if smaller is None:
            index += 1
        else:
            ops, replayed = candidate, smaller
    return replayed


def _fails(
    run: Callable[[list[Op]], None], ops: list[Op], contract_id: str
) -> ContractViolation | None:
    try:
        run(ops)
    except ContractViolation as violation:
        return violation if violation.contract_id == contract_id else None
    return None


def _not_replayed(violation: ContractViolation) -> ContractViolation:
    again = ContractViolation(
        violation.contract_id, f"{NOT_REPLAYED}: {violation.problem}", violation.reproducer
    )
    again.__cause__ = violation.__cause__
    return again

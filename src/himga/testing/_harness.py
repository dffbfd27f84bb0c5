"""Calls memories, records every call as a reproducer line, and checks each result.

Leaks are found with canary tokens: every ingested message in a leak check
carries two tokens no other message has -- a key the kit queries for and a
secret it never queries for -- and the harness knows which instance ingested
them and whether that instance was reset since. A token in an output is
therefore legal only if the same instance ingested it after its last reset, or
if the query itself holds it (a memory may echo its query) -- whatever the
memory deems relevant, and however random its output.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable
from typing import Any, NoReturn

from himga.data.schema import Message, Session
from himga.testing._contracts import ContractViolation

__all__ = ["CANARY", "Harness"]

# Keys are zq<run>c<n>xq, secrets zq<run>s<n>xq.
CANARY = re.compile(r"zq\d+[cs]\d+xq")
# A fresh salt per run keeps tokens unique across runs, so a token that survived in
# class- or module-level state from an earlier run is recognised as foreign.
_RUNS = itertools.count(1)
_SHOWN = 60

RETURNS_STR = "retrieve-returns-str"
EMPTY_QUERY = "retrieve-empty-query"
RESET_CLEARS = "reset-clears"
REUSE = "reuse-after-reset"
ISOLATION = "instance-isolation"


def _show(text: str) -> str:
    if len(text) <= _SHOWN:
        return repr(text)
    if len(set(text)) == 1:
        return f"{text[0]!r} * {len(text)}"
    return f"{text[:_SHOWN]!r} ... ({len(text)} chars)"


def _show_message(message: Message) -> str:
    turn = f", turn_id={message.turn_id!r}" if message.turn_id is not None else ""
    return f"Message(role={message.role!r}, content={_show(message.content)}{turn})"


def _show_session(session: Session) -> str:
    inner = ", ".join(_show_message(m) for m in session.messages)
    date = f", date_str={session.date_str!r}" if session.date_str is not None else ""
    return f"Session(session_id={session.session_id!r}, messages=[{inner}]{date})"


def _describe_factory(factory: Callable[[], Any]) -> str:
    module = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None)
    return f"{module}:{name}" if module and name else repr(factory)


class Harness:
    """Runs calls on memories made by one factory and checks every result.

    Crashes and non-``str`` results are always checked, and blamed on the
    contract they break (see :meth:`_blame`). ``checks`` selects the output
    checks of this run: ``reset-clears`` and ``instance-isolation`` (the state
    machine makes both, each program of ``check_contract`` its own).
    """

    def __init__(self, factory: Callable[[], Any], checks: frozenset[str]) -> None:
        self._factory = factory
        self._checks = checks
        self._run = next(_RUNS)
        self._canaries: list[str] = []
        self._owner: dict[str, int] = {}
        self._contents: list[str] = []
        self._session_names: dict[int, str] = {}
        self.trace: list[str] = [f"factory = {_describe_factory(factory)}"]
        self.memories: list[Any] = []
        self.live: list[set[str]] = []  # tokens ingested since the instance's last reset
        self.holds: list[bool] = []  # anything ingested since the instance's last reset
        self.touched: list[bool] = []  # ever ingested or reset
        self.history: list[list[tuple[Message, Session]]] = []  # ingested since last reset
        self.resets: list[int] = []

    # -- the calls --------------------------------------------------------------

    def new_instance(self) -> int:
        """Create one more memory with the factory; returns its index."""
        index = len(self.memories)
        self.trace.append(f"m{index + 1} = factory()")
        try:
            memory = self._factory()
        except Exception as exc:
            # The contract under check could not be exercised: report it under that one.
            blame = next(iter(self._checks)) if len(self._checks) == 1 else RETURNS_STR
            self._fail(blame, f"factory() raised {type(exc).__name__}: {exc}", exc)
        self.memories.append(memory)
        self.live.append(set())
        self.holds.append(False)
        self.touched.append(False)
        self.history.append([])
        self.resets.append(0)
        return index

    def new_canary(self, index: int) -> str:
        """A key and a secret never used before, ``"<key> <secret>"``, for instance ``index``.

        Queries ask for the key; the secret is never queried, so a memory that
        echoes its query cannot make it appear.
        """
        n = len(self._canaries) + 1
        key, secret = f"zq{self._run}c{n}xq", f"zq{self._run}s{n}xq"
        self._canaries.append(key)
        self._owner[key] = self._owner[secret] = index
        return f"{key} {secret}"

    def canary(self, k: int, fallback: str) -> str:
        """The ``k``-th key handed out so far (cyclically), ``fallback`` if none was."""
        return self._canaries[k % len(self._canaries)] if self._canaries else fallback

    @property
    def canaries(self) -> list[str]:
        """Every key handed out so far, in order."""
        return list(self._canaries)

    def content(self, k: int, fallback: str) -> str:
        """The ``k``-th non-blank ingested content (cyclically), else ``fallback``."""
        return self._contents[k % len(self._contents)] if self._contents else fallback

    def ingest(self, index: int, message: Message, session: Session) -> None:
        name = self._session_name(session)
        self.trace.append(f"m{index + 1}.ingest({_show_message(message)}, {name})")
        self._call(index, "ingest", message, session)
        if message.content.strip():
            self._contents.append(message.content)
        self.live[index].update(CANARY.findall(message.content))
        self.history[index].append((message, session))
        self.holds[index] = True
        self.touched[index] = True

    def reset(self, index: int) -> None:
        self.trace.append(f"m{index + 1}.reset()")
        self._call(index, "reset")
        self.live[index] = set()
        self.history[index] = []
        self.holds[index] = False
        self.touched[index] = True
        self.resets[index] += 1

    def retrieve(self, index: int, query: str) -> str:
        self.trace.append(f"m{index + 1}.retrieve({_show(query)})")
        output = self._call(index, "retrieve", query)
        if not isinstance(output, str):
            self.trace[-1] += f"  # -> {output!r:.{_SHOWN}}"
            blame = self._blame(index, "retrieve", (query,))
            self._fail(blame, f"retrieve returned {type(output).__name__}, not str")
        self.trace[-1] += f"  # -> {_show(output)}"
        self._check_output(index, output, query)
        return output

    # -- the checks -------------------------------------------------------------

    def _check_output(self, index: int, output: str, query: str) -> None:
        me = f"m{index + 1}"
        # A token the query holds may be an echo of the query: the secret shows leaks.
        tokens = [token for token in CANARY.findall(output) if token not in query]
        unknown = [token for token in tokens if token not in self._owner]
        if unknown and self._checks & {RESET_CLEARS, ISOLATION}:
            self._fail(
                ISOLATION,
                f"{me}'s output holds {unknown[0]!r}, which an instance of an earlier run "
                f"ingested: state is shared across instances",
            )
        if RESET_CLEARS in self._checks:
            for token in tokens:
                if self._owner[token] == index and token not in self.live[index]:
                    self._fail(
                        RESET_CLEARS,
                        f"{token!r} was ingested by {me} before its reset(), "
                        f"yet appears in its output",
                    )
            if not self.holds[index] and output and not self._others_hold(index):
                state = "was reset" if self.resets[index] else "is fresh"
                problem = (
                    f'{me} {state} and has ingested nothing since, so retrieve must return "", '
                    f"but it returned {_show(output)}"
                )
                if self._shares_state():
                    self._fail(
                        ISOLATION,
                        f"{problem}; it comes from other instances: a new instance's output "
                        f"changes when another new instance ingests",
                    )
                self._fail(RESET_CLEARS, problem)
        if ISOLATION in self._checks:
            for token in tokens:
                owner = self._owner[token]
                if owner != index:
                    self._fail(
                        ISOLATION,
                        f"{token!r} was ingested by m{owner + 1}, yet appears in {me}'s output",
                    )
            if not self.touched[index] and output and self._others_hold(index):
                self._fail(
                    ISOLATION,
                    f"{me} is fresh, yet returned {_show(output)} while another instance "
                    f"holds content",
                )

    def _shares_state(self) -> bool:
        """Whether one new instance's output changes when another new instance ingests.

        Tells leftovers of other instances (say, of earlier runs) from a memory
        that is simply not empty when fresh. The calls join the reproducer.
        """
        shown = len(self.trace)
        watcher, writer = len(self.memories) + 1, len(self.memories) + 2
        token = f"zq{self._run}c0xq"
        message = Message(role="user", content=f"diagnosis {token}")
        self.trace += [
            "# is that output another instance's? two more instances:",
            f"m{watcher} = factory()",
            f"m{writer} = factory()",
        ]
        try:
            first, second = self._factory(), self._factory()
            before = first.retrieve(token)
            self.trace.append(f"m{watcher}.retrieve({token!r})  # -> {_show(str(before))}")
            second.ingest(message, Session(session_id="diagnosis", messages=()))
            self.trace.append(
                f"m{writer}.ingest({_show_message(message)}, Session('diagnosis', []))"
            )
            after = first.retrieve(token)
            self.trace.append(f"m{watcher}.retrieve({token!r})  # -> {_show(str(after))}")
        except Exception:
            before = after = None
        if before == after:
            del self.trace[shown:]  # no evidence: keep the reproducer minimal
            return False
        return True

    def _others_hold(self, index: int) -> bool:
        return any(holds for i, holds in enumerate(self.holds) if i != index)

    def _call(self, index: int, method: str, *args: Any) -> Any:
        try:
            output = getattr(self.memories[index], method)(*args)
        except Exception as exc:
            problem = f"{method} raised {type(exc).__name__}: {exc}"
            self._fail(self._blame(index, method, args), problem, exc)
        if inspect.iscoroutine(output):
            output.close()  # never awaited by design; closing avoids a RuntimeWarning
        return output

    def _blame(self, index: int, method: str, args: tuple[Any, ...]) -> str:
        """The contract a crash or a non-str result breaks.

        A failing ``reset`` breaks ``reuse-after-reset``; so does any call after a
        reset that a fresh instance given the same history copes with.
        """
        if method == "reset" or (
            self.resets[index] and self._copes_without_reset(index, method, args)
        ):
            return REUSE
        if method == "retrieve" and not args[0].strip():
            return EMPTY_QUERY
        return RETURNS_STR

    def _copes_without_reset(self, index: int, method: str, args: tuple[Any, ...]) -> bool:
        # A diagnosis only: these calls are not part of the reproducer.
        try:
            twin = self._factory()
            for message, session in self.history[index]:
                twin.ingest(message, session)
            output = getattr(twin, method)(*args)
        except Exception:
            return False
        return method != "retrieve" or isinstance(output, str)

    def _session_name(self, session: Session) -> str:
        name = self._session_names.get(id(session))
        if name is None:
            name = f"s{len(self._session_names) + 1}"
            self._session_names[id(session)] = name
            self.trace.append(f"{name} = {_show_session(session)}")
        return name

    def _fail(self, contract_id: str, problem: str, cause: Exception | None = None) -> NoReturn:
        raise ContractViolation(contract_id, problem, "\n".join(self.trace)) from cause

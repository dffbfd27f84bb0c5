"""``himga check MODULE:ATTR|NAME``: run the conformance kit on a memory and report per contract."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from typing import Any

from himga._extras import MissingExtraError, require
from himga.memory import MemoryLoadError, PluginImportError, resolve_memory
from himga.testing import CONTRACTS, DEFAULT_MAX_EXAMPLES, ContractViolation

__all__ = ["BROKEN_PIPE", "register", "run"]

# A closed stdout (`himga check X | head`) is neither a pass (0) nor a failing
# contract (1): 141 is what a shell reports for a process killed by SIGPIPE.
BROKEN_PIPE = 141


def register(commands: Any) -> None:
    """Add the ``check`` sub-command to ``commands`` (an argparse sub-parsers object)."""
    parser = commands.add_parser(
        "check",
        help="prove that a memory honours the BaseMemory contracts",
        description=(
            "Run every contract of the conformance kit (himga.testing) against a memory. "
            "One line per contract: pass, FAIL (with the problem and a runnable minimal "
            "reproducer), skip (another contract's failure kept it from being checked) or "
            "n/a (search-returns-hits for a memory without search). Exit status: 0 all "
            "pass, 1 a contract fails, 2 usage or import error, 141 stdout was closed."
        ),
    )
    parser.add_argument(
        "memory",
        metavar="MODULE:ATTR|NAME",
        help="a zero-argument memory factory as module:attr, or a registered memory name",
    )
    parser.add_argument(
        "--list",
        action=_ListContracts,
        help="print every contract's id and what it promises, then exit (checks nothing)",
    )
    parser.add_argument(
        "--max-examples",
        type=_positive_int,
        default=None,
        help="generated programs per contract (default: the kit's default, 100)",
    )
    parser.add_argument(
        "--contract",
        action="append",
        metavar="ID",
        default=None,
        help="check only this contract (repeatable; protocol-shape is always checked first)",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="the memory promises equal outputs for equal call histories: check that too",
    )
    search = parser.add_mutually_exclusive_group()
    search.add_argument(
        "--derandomize", action="store_true", help="search deterministically (repeatable runs)"
    )
    search.add_argument(
        "--seed", type=int, default=None, metavar="N", help="seed the search (repeatable runs)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per contract (id, status, problem, raised_at, "
        "reproducer, seconds) instead of text",
    )
    parser.set_defaults(handler=run)


class _ListContracts(argparse.Action):
    """``--list``: like ``--help``, answers without a memory and exits 0 (needs no Hypothesis)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        for contract in CONTRACTS:
            print(f"{contract.id}\n    {contract.summary}")
        parser.exit(0)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _error(message: str) -> int:
    print(f"himga check: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Check ``args.memory``: 0 all pass, 1 a contract fails, 2 cannot check, 141 closed stdout."""
    try:
        return _run(args)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep the interpreter's
        # final flush from failing again on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


def _run(args: argparse.Namespace) -> int:
    try:
        require("hypothesis", extra="testing", purpose="himga check")
    except MissingExtraError as exc:
        return _error(str(exc))
    from himga.testing import check_contract
    from himga.testing._harness import raised_at

    known = [contract.id for contract in CONTRACTS]
    wanted = args.contract or known
    unknown = [contract_id for contract_id in wanted if contract_id not in known]
    if unknown:
        return _error(f"unknown contract id {unknown[0]!r} (known: {', '.join(known)})")
    try:
        factory = resolve_memory(args.memory).factory
    except PluginImportError as exc:
        # The plug-in's own import failed: show where, not only what.
        traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        return _error(str(exc))
    except MemoryLoadError as exc:
        return _error(str(exc))

    max_examples = args.max_examples or DEFAULT_MAX_EXAMPLES
    if not args.json:
        mode = ", deterministic" if args.deterministic else ""
        print(f"checking {args.memory} ({max_examples} examples per contract{mode})", flush=True)
    searchable = _searchable(factory)
    # A contract's run may uncover another contract's violation (a crash is blamed on
    # the contract it breaks); that contract then fails and this one is not checked.
    found: dict[str, ContractViolation] = {}
    blocked: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for contract_id in [c for c in known if c in wanted]:
        if contract_id in found:
            continue
        start = time.perf_counter()
        try:
            check_contract(
                factory,
                contract_id,
                max_examples=max_examples,
                derandomize=args.derandomize,
                deterministic=args.deterministic,
                seed=args.seed,
            )
        except ContractViolation as violation:
            found.setdefault(violation.contract_id, violation)
            if violation.contract_id != contract_id:
                blocked[contract_id] = violation.contract_id
        seconds[contract_id] = time.perf_counter() - start
    for contract_id in [c for c in known if c in wanted or c in found]:
        failure = found.get(contract_id)
        if contract_id in found:
            status = "FAIL"
        elif contract_id in blocked:
            status = "skip"
        elif contract_id == "search-returns-hits" and not searchable:
            status = "n/a"
        else:
            status = "pass"
        where = None
        if failure is not None and failure.__cause__ is not None:
            where = raised_at(failure.__cause__)
        if args.json:
            record = {
                "id": contract_id,
                "status": status.lower(),
                "problem": failure.problem if failure else None,
                "raised_at": where,
                "reproducer": failure.reproducer if failure else None,
                "blocked_by": blocked.get(contract_id),
                "seconds": round(seconds.get(contract_id, 0.0), 3),
            }
            print(json.dumps(record), flush=True)
        elif failure is not None:
            print(f"FAIL  {contract_id}  {failure.problem}")  # a crash's problem says where
            for line in failure.reproducer.splitlines():
                print(f"      {line}".rstrip())
        elif status == "skip":
            print(f"skip  {contract_id}  (not checked: {blocked[contract_id]} fails first)")
        elif status == "n/a":
            print(f"n/a   {contract_id}  (no search method)")
        else:
            print(f"pass  {contract_id}")
        sys.stdout.flush()
    return 1 if found else 0


def _searchable(factory: Any) -> bool:
    try:
        return callable(getattr(factory(), "search", None))
    except Exception:  # reported by protocol-shape
        return False

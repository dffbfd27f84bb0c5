"""``himga check MODULE:ATTR|NAME``: run the conformance kit on a memory and report per contract."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from himga._cli._exits import BROKEN_PIPE, INTERRUPTED
from himga._exit_guard import exit_called
from himga._extras import MissingExtraError, require
from himga.eval._memory_calls import memory_timeout_argument
from himga.memory import MemoryLoadError, PluginImportError, resolve_memory
from himga.memory._registry import parse_memory_arguments
from himga.testing import CONTRACTS, DEFAULT_MAX_EXAMPLES, KIT_MEMORY_TIMEOUT

if TYPE_CHECKING:
    from himga.testing._outcomes import ContractOutcome

__all__ = ["BROKEN_PIPE", "INTERRUPTED", "register", "run"]


def register(commands: Any) -> None:
    """Add the ``check`` sub-command to ``commands`` (an argparse sub-parsers object)."""
    parser = commands.add_parser(
        "check",
        help="prove that a memory honours the BaseMemory contracts",
        description=(
            "Run every contract of the conformance kit (himga.testing) against a memory. "
            "One line per contract: pass, FAIL (with the problem and a runnable minimal "
            "reproducer), skip (another contract's failure kept it from being checked) or "
            "n/a (search-returns-hits for a memory without search). A memory call still "
            "running after --memory-timeout fails the contract under check. Exit status: 0 all "
            "pass, 1 a contract fails (a memory that calls sys.exit or raises SystemExit "
            "fails the contract whose call did it), 2 usage or import error, 130 interrupted "
            "(Ctrl-C, or a memory raising KeyboardInterrupt), 141 stdout was closed."
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
        "--memory-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument for the memory's factory, as himga eval takes it (repeatable; "
        "VALUE is parsed as JSON when it parses, else kept as a string; a parameter "
        "annotated bool takes true/false in any case)",
    )
    parser.add_argument(
        "--max-examples",
        type=_positive_int,
        default=None,
        help="generated programs per contract (default: the kit's default, 100)",
    )
    parser.add_argument(
        "--memory-timeout",
        type=memory_timeout_argument,
        default=KIT_MEMORY_TIMEOUT,
        metavar="S|none",
        help="fail the contract under check when a memory call has not returned after S "
        f"seconds (per call; default: {KIT_MEMORY_TIMEOUT:g}, 'none': no deadline)",
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
    """Check ``args.memory``: 0 all pass, 1 a contract fails, 2 cannot check, 130 interrupted,
    141 closed stdout."""
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(
            "himga check: interrupted (Ctrl-C, or the memory raised KeyboardInterrupt): "
            "nothing was proven",
            file=sys.stderr,
        )
        return INTERRUPTED
    except SystemExit as exc:
        # Argument errors exit before this runs: a SystemExit here is the memory's own
        # (sys.exit, os._exit) from outside any contract's calls. Never a pass.
        print(f"himga check: error: the memory called {exit_called(exc)}", file=sys.stderr)
        return 1
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
    known = [contract.id for contract in CONTRACTS]
    wanted = args.contract or known
    unknown = [contract_id for contract_id in wanted if contract_id not in known]
    if unknown:
        return _error(f"unknown contract id {unknown[0]!r} (known: {', '.join(known)})")
    with _memory_output_to_stderr() as verdicts:
        return _check(args, known, wanted, verdicts)


def _check(args: argparse.Namespace, known: list[str], wanted: list[str], out: TextIO) -> int:
    from himga.testing._outcomes import ContractChecker

    try:
        arguments = parse_memory_arguments(args.memory_arg)
        factory = resolve_memory(args.memory, arguments).factory
    except PluginImportError as exc:
        # The plug-in's own import failed: show where, not only what.
        traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        return _error(str(exc))
    except MemoryLoadError as exc:
        return _error(str(exc))

    max_examples = args.max_examples or DEFAULT_MAX_EXAMPLES
    if not args.json:
        mode = ", deterministic" if args.deterministic else ""
        line = f"checking {args.memory} ({max_examples} examples per contract{mode})"
        print(line, file=out, flush=True)
    checker = ContractChecker(
        factory,
        max_examples=max_examples,
        derandomize=args.derandomize,
        deterministic=args.deterministic,
        seed=args.seed,
        timeout=args.memory_timeout,
    )
    for contract_id in [c for c in known if c in wanted]:
        _print(checker.outcome(contract_id), as_json=args.json, out=out)
    # A contract not asked for, whose violation another contract's run uncovered.
    for contract_id in [c for c in known if c not in wanted and c in checker.found]:
        _print(checker.outcome(contract_id), as_json=args.json, out=out)
    return 1 if checker.found else 0


@contextlib.contextmanager
def _memory_output_to_stderr() -> Iterator[TextIO]:
    """The stream for the verdicts (stdout); meanwhile anything else written to stdout --
    the memory's own prints, from Python or native code -- goes to stderr, so stdout
    holds verdicts only (under ``--json``, one JSON object per line and nothing else)."""
    verdicts = sys.stdout
    try:
        fd, err_fd = verdicts.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not backed by a file (captured in process)
        with contextlib.redirect_stdout(sys.stderr):
            yield verdicts
        return
    verdicts.flush()
    saved = os.dup(fd)
    # Closing the stream closes the duplicate, after fd 1 is stdout again.
    with open(saved, "w", encoding=verdicts.encoding, errors=verdicts.errors, buffering=1) as out:
        os.dup2(err_fd, fd)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                yield out
        finally:
            with contextlib.suppress(OSError):  # a closed pipe: the caller says so
                out.flush()
            os.dup2(saved, fd)


def _print(outcome: ContractOutcome, *, as_json: bool, out: TextIO) -> None:
    from himga.testing._harness import raised_at

    failure = outcome.violation
    contract_id = outcome.contract_id
    if as_json:
        where = None
        if failure is not None and failure.__cause__ is not None:
            where = raised_at(failure.__cause__)
        record = {
            "id": contract_id,
            "status": outcome.status,
            "problem": failure.problem if failure else None,
            "raised_at": where,
            "reproducer": failure.reproducer if failure else None,
            "blocked_by": outcome.blocked_by,
            "seconds": round(outcome.seconds, 3),
        }
        print(json.dumps(record), file=out, flush=True)
        return
    if failure is not None:
        # A crash's problem says where; another contract's violation names it.
        named = "" if failure.contract_id == contract_id else f"[{failure.contract_id}] "
        print(f"FAIL  {contract_id}  {named}{failure.problem}", file=out)
        for line in failure.reproducer.splitlines():
            print(f"      {line}".rstrip(), file=out)
    elif outcome.status == "pass":
        print(f"pass  {contract_id}", file=out)
    else:
        print(f"{outcome.status:<4}  {contract_id}  ({outcome.reason})", file=out)
    out.flush()

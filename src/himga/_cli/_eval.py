"""``himga eval``: run a memory through a benchmark and write a traceable run directory."""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sqlite3
import sys
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any

from himga._cli._exits import EXIT_INCOMPLETE, INTERRUPTED
from himga._cli._options import add_judge_options, judge_base_url_error, path
from himga._cli._warnings import one_line_warnings
from himga._exit_guard import exit_called
from himga._redact import REDACTED, redact, redact_arguments
from himga.eval import ARMS, compute_measurements, format_table
from himga.eval._memory_calls import DEFAULT_MEMORY_TIMEOUT, memory_timeout_argument
from himga.testing import KIT_MEMORY_TIMEOUT

__all__ = ["EXIT_INCOMPLETE", "register", "run"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "eval",
        help="evaluate a memory on a benchmark (offline retrieval metrics without --llm)",
        description=(
            "Ingest each sample into the memory, retrieve per question and, with --llm, "
            "answer and judge. Prints a per-category table; writes results.jsonl, "
            "metrics.json and manifest.json into --out. A pre-flight check of the memory "
            "runs first. Exit status: 0 complete, 2 usage, configuration or pre-flight "
            f"error, {EXIT_INCOMPLETE} finished but incomplete (a memory, LLM or judge call "
            "failed on some questions: recorded per question, excluded from the metrics), "
            f"{INTERRUPTED} interrupted (Ctrl-C: the finished questions are kept; --resume "
            "finishes the run)."
        ),
    )
    parser.add_argument(
        "--dataset",
        default="locomo",
        help="registered dataset name or module:attr benchmark (default: locomo)",
    )
    parser.add_argument(
        "--data-path",
        type=path,
        default=None,
        help="dataset file or directory (default: resolved by name)",
    )
    parser.add_argument(
        "--memory",
        default=None,
        help="registered memory name or module:attr factory (default: bm25; null with "
        "--arm oracle)",
    )
    parser.add_argument(
        "--memory-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument of the memory (repeatable; VALUE is JSON if it parses, "
        "else a string; a parameter annotated bool takes true/false in any case), "
        "e.g. --memory-arg k=20",
    )
    parser.add_argument(
        "--memory-timeout",
        type=memory_timeout_argument,
        default=DEFAULT_MEMORY_TIMEOUT,
        metavar="S|none",
        help="fail a memory call that has not returned after S seconds (per call; default: "
        f"{DEFAULT_MEMORY_TIMEOUT:g}, 'none': no deadline); the question is recorded as a "
        "memory error and the run goes on (pre-flight's calls: at most "
        f"{KIT_MEMORY_TIMEOUT:g} s each)",
    )
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the pre-flight check of the memory (protocol shape and a quick kit pass)",
    )
    parser.add_argument(
        "--llm",
        choices=("anthropic", "openai", "local"),
        default=None,
        help="answer with this provider (key and base URL from the SDK's environment "
        "variables; local: the GGUF file --model served on loopback, needs himga[local])",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="model name (default: the provider's); with --llm local the GGUF file's path",
    )
    parser.add_argument(
        "--llm-threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads of the local model (--llm local; default 1)",
    )
    parser.add_argument(
        "--llm-context",
        type=int,
        default=None,
        metavar="TOKENS",
        help="context window of the local model in tokens (--llm local; default 4096)",
    )
    parser.add_argument(
        "--llm-timeout",
        type=_positive_float,
        default=None,
        metavar="S",
        help="seconds each LLM request attempt may take (default 120); a call, its retries "
        "included, ends within S x (retries + 1) plus the back-off between attempts (0.5 s "
        "doubling to at most 8 s) and 1 s -- 736.5 s with the defaults -- or fails as an "
        "LLM error of its question",
    )
    parser.add_argument(
        "--llm-retries",
        type=int,
        default=None,
        metavar="N",
        help="retries of a failed LLM request (rate limit, server error, timeout; default 5)",
    )
    parser.add_argument(
        "--llm-cache",
        type=path,
        default=None,
        metavar="PATH",
        help="answer repeated LLM requests from this SQLite file (created if missing)",
    )
    parser.add_argument("--limit", type=int, default=None, help="evaluate the first N samples")
    parser.add_argument(
        "--out", type=path, default=None, help="run directory (default: runs/<UTC timestamp>)"
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its checkpoint (refused if anything that "
        "identifies the run changed)",
    )
    again.add_argument(
        "--fresh", action="store_true", help="discard the run in --out and start over in place"
    )
    parser.add_argument(
        "--judge",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="judge the answers (default: on when --llm is given; with the answerer's LLM "
        "unless --judge-llm / --judge-model / --judge-base-url say otherwise)",
    )
    add_judge_options(
        parser,
        required=False,
        llm_help="judge with this provider, apart from the answerer (any provider --llm takes; "
        "default: the answerer's)",
        model_help="judge with this model (default: --model when the judge's provider is the "
        "answerer's, else the provider's default)",
        base_url_help="the judge's server, when it is another OpenAI- or Anthropic-compatible "
        "one than the answerer's (default: the provider's environment variable)",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        default=None,
        metavar="FILE",
        help="evaluate only these questions: a file of question ids, one a line (blank "
        "lines and # comments allowed); part of the run identity",
    )
    parser.add_argument(
        "--arm",
        choices=ARMS,
        default="memory",
        help="where each question's context comes from: the memory's retrieval (default) "
        "or, with 'oracle', only the question's gold evidence turns (the reader's ceiling; "
        "--memory null); part of the run identity",
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="LLM calls in flight (default: client's)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    scale = parser.add_argument_group("scaling out (docs/scale.md)")
    scale.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/N",
        help="evaluate shard I of N (1 <= I <= N: 1/2 is the first half, as in Playwright, "
        "Jest and Vitest; samples chosen by a hash of their id) into --out; join the N run "
        "directories with himga merge",
    )
    scale.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run on the Ray cluster at ADDRESS ('auto': this machine's; needs himga[ray]); "
        "--concurrency is then the LLM calls in flight over all workers",
    )
    scale.add_argument(
        "--workers",
        type=int,
        default=None,
        help="Ray actors, one agent each (default 2; needs --ray)",
    )
    scale.add_argument(
        "--worker-resource",
        action="append",
        type=_resource,
        default=[],
        metavar="NAME=AMOUNT",
        help="resources each Ray worker reserves, e.g. GPU=1 (repeatable; default CPU=1)",
    )
    parser.set_defaults(handler=run)


def _shard(text: str) -> Any:
    from himga.eval._shard import Shard, ShardSpecError

    try:
        return Shard.parse(text)
    except ShardSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _resource(text: str) -> tuple[str, float]:
    name, equals, amount = text.partition("=")
    try:
        value = float(amount)
    except ValueError:
        value = -1.0
    if not equals or not name.strip() or not value >= 0:
        raise argparse.ArgumentTypeError(f"expected NAME=AMOUNT with AMOUNT >= 0, got {text!r}")
    return name.strip(), value


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def _usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the options on their own, before anything runs; ``None`` if nothing."""
    for needs_llm in ("model", "llm_cache", "llm_timeout", "llm_retries"):
        if args.llm is None and getattr(args, needs_llm) is not None:
            return f"--{needs_llm.replace('_', '-')} needs --llm"
    if args.llm is None and args.judge:
        return "--judge needs --llm"
    for judge_option in ("judge_llm", "judge_model", "judge_base_url"):
        if getattr(args, judge_option) is not None and (args.llm is None or args.judge is False):
            flag = f"--{judge_option.replace('_', '-')}"
            return f"{flag} needs --llm" if args.llm is None else f"{flag} contradicts --no-judge"
    url_error = judge_base_url_error(args.judge_base_url)
    if url_error is not None:
        return url_error
    for local_only in ("llm_threads", "llm_context"):
        if args.llm != "local" and getattr(args, local_only) is not None:
            return f"--{local_only.replace('_', '-')} needs --llm local"
    if args.ray is None and (args.workers is not None or args.worker_resource):
        return "--workers and --worker-resource need --ray"
    for option in ("limit", "concurrency", "workers", "llm_threads", "llm_context"):
        value = getattr(args, option)
        if value is not None and value < 1:
            return f"--{option.replace('_', '-')} must be >= 1, got {value}"
    if args.llm_retries is not None and args.llm_retries < 0:
        return f"--llm-retries must be >= 0, got {args.llm_retries}"
    from himga.runs._rundir import LOCK, MARKER, RUN_FILES

    cache: Path | None = args.llm_cache
    if cache is not None:
        if cache.is_dir():
            return f"--llm-cache {cache} is a directory: give the path of a SQLite file"
        if cache.exists() and not os.access(cache, os.R_OK | os.W_OK):
            return f"--llm-cache {cache} cannot be read and written (permissions)"
        parent = cache.parent if str(cache.parent) else Path(".")
        if not cache.exists() and not (parent.is_dir() and os.access(parent, os.W_OK)):
            return f"--llm-cache {cache}: cannot create it in {parent} (missing or read-only)"
        if cache.name in {*RUN_FILES, MARKER, LOCK}:
            return f"--llm-cache {cache}: the name of a run directory's own file; choose another"
    if args.arm == "oracle" and args.memory != "null":
        return (
            "--arm oracle answers from each question's gold evidence turns, not from a "
            f"memory: leave out --memory {args.memory}"
        )
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} is a file, not a run directory"
    return None


def run(args: argparse.Namespace) -> int:
    from himga._extras import MissingExtraError
    from himga.benchmarks import BenchmarkLoadError
    from himga.data import (
        DatasetError,
        DatasetNotFoundError,
        QuestionFileError,
        UnknownDatasetError,
    )
    from himga.eval import CheckpointError, RayClusterError, WorkerStartError
    from himga.llm import LLMConfigError
    from himga.memory import MemoryLoadError
    from himga.runs import (
        ArmError,
        PreflightFailedError,
        RunDirError,
        RunReadError,
        default_run_directory,
    )

    if args.memory is None:
        args.memory = "null" if args.arm == "oracle" else "bm25"
    problem = _usage_error(args)
    if problem is not None:
        print(f"himga eval: {problem}", file=sys.stderr)
        return 2
    # Chosen here, so an interrupted run can say where it kept what it finished.
    given = args.out is not None
    args.out = args.out or default_run_directory()
    expected = (
        ArmError,
        CheckpointError,
        DatasetError,
        DatasetNotFoundError,
        LLMConfigError,
        MemoryLoadError,
        MissingExtraError,
        QuestionFileError,
        BenchmarkLoadError,
        RayClusterError,
        RunDirError,
        RunReadError,
        UnknownDatasetError,
        WorkerStartError,
    )
    with warnings.catch_warnings():
        # Dataset repairs (e.g. an evidence id naming no turn) as one line each.
        warnings.showwarning = one_line_warnings("himga eval")
        try:
            return _evaluate(args, args.out)
        except KeyboardInterrupt:
            # The first Ctrl-C ends the run even while a memory call hangs (memory calls
            # run on daemon threads): say what the checkpoint kept and how to go on.
            message = f"himga eval: interrupted (Ctrl-C): {_kept(args.out, given=given)}"
            print(redact(message), file=sys.stderr)
            return INTERRUPTED
        except SystemExit as exc:
            # argparse is done by now: this is the memory's factory calling sys.exit (or
            # os._exit, raised as SystemExit by himga._exit_guard).
            print(f"himga eval: error: the memory called {exit_called(exc)}", file=sys.stderr)
            return 2
        except PreflightFailedError as exc:
            _print_preflight_failure(args, exc.report)
            return 2
        except expected as exc:
            print(redact(f"himga eval: error: {exc}"), file=sys.stderr)
            return 2
        except (OSError, sqlite3.Error) as exc:
            # The run directory or the LLM cache could not be written (full, read-only, gone):
            # name the file; SQLite's errors name none, but only the LLM cache is SQLite.
            what = getattr(exc, "filename", None) or (
                args.llm_cache if isinstance(exc, sqlite3.Error) else f"into {args.out}"
            )
            reason = getattr(exc, "strerror", None) or str(exc)
            message = (
                f"himga eval: error: cannot write {what}: {reason}; {_kept(args.out, given=given)}"
            )
            print(redact(message), file=sys.stderr)
            return 2


def _kept(out: Path, *, given: bool) -> str:
    """What a run that stopped early left in ``out``, and how to go on (``given``: the
    command named ``--out`` itself)."""
    from himga.runs import RunDir

    run_dir = RunDir(out)
    if not run_dir.checkpoint.exists():
        return "no result was recorded: rerun the command to start again"
    again = "--resume" if given else f"--out {shlex.quote(str(out))} --resume"
    return (
        f"{run_dir.finished()} finished questions are kept in {run_dir.checkpoint}; "
        f"to go on, rerun the same command with {again}"
    )


def _evaluate(args: argparse.Namespace, out: Path) -> int:
    from himga.benchmarks import dataset_name
    from himga.memory import parse_memory_arguments
    from himga.runs import EvalRequest, evaluate_run

    # The options named as the request's fields pass as they are; the others are spelled out.
    same = {f.name: getattr(args, f.name) for f in fields(EvalRequest) if hasattr(args, f.name)}
    same["out"] = out
    # A module:attr benchmark runs under its own name; the spec stays in the arguments.
    same["dataset"] = dataset_name(args.dataset)
    request = EvalRequest(
        **same,
        memory_arguments=parse_memory_arguments(args.memory_arg),
        preflight=not args.no_preflight,
        show_progress=not args.no_progress,
        worker_resources=dict(args.worker_resource),
        arguments={
            name: value if value is None or isinstance(value, (int, float, bool)) else str(value)
            for name, value in sorted(vars(args).items())
            if name not in ("handler", "command", "memory_arg", "worker_resource")
        },
    )
    outcome = evaluate_run(
        request, notify=lambda note: print(f"himga eval: {note}", file=sys.stderr)
    )
    if outcome.resumed:
        print(f"resumed {outcome.resumed} of {outcome.planned} results from the checkpoint")
    measured = compute_measurements(outcome.results)
    print(format_table(outcome.metrics, dataset=same["dataset"], measurements=measured))
    for line in outcome.summary():
        print(line)
    for line in outcome.problems():
        print(line, file=sys.stderr)
    return EXIT_INCOMPLETE if outcome.incomplete else 0


def _print_preflight_failure(args: argparse.Namespace, report: Any) -> None:
    lines = [f"himga eval: pre-flight failed: memory {args.memory!r} breaks [{report.failed}]:"]
    lines.append(f"  {report.problem}")
    if report.reproducer:
        lines.append("  minimal reproducer:")
        lines += [f"      {line}" for line in report.reproducer.splitlines()]
    # The same memory, built with the same arguments, as a command to paste into a shell.
    check = ["himga", "check", args.memory]
    for argument in args.memory_arg:
        name, _, value = argument.partition("=")
        shown = redact_arguments({name: value})[name]
        check += ["--memory-arg", argument if shown == value else f"{name}={REDACTED}"]
    lines.append(f"  see every contract: {shlex.join(check)}  (or skip this check: --no-preflight)")
    print(redact("\n".join(lines)), file=sys.stderr)

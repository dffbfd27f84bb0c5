"""``himga eval``: run a memory through a benchmark and write a traceable run directory."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import himga
from himga._cli._preflight import PreflightReport, preflight
from himga._errors import HimgaError
from himga.agent import BaseAgent, prompt_hashes
from himga.eval import (
    EvalResult,
    JudgeScores,
    RunIdentity,
    batch_judge,
    compute_metrics,
    run_eval,
)
from himga.eval._ranking import RANK_KS
from himga.eval._run import memory_config
from himga.llm._client import public_url

__all__ = ["register", "run"]

#: Exit status of a run that finished with some questions failed (memory or LLM errors).
EXIT_INCOMPLETE = 3
# The files of a run directory (--fresh removes them).
_RUN_FILES = (
    "checkpoint.jsonl",
    "judge_cache.json",
    "results.jsonl",
    "metrics.json",
    "manifest.json",
    "shard.json",
    "report.md",  # himga report: it would describe the discarded run
    "report.png",
)

# Environment variables whose values must never be written anywhere.
_SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "eval",
        help="evaluate a memory on a benchmark (offline retrieval metrics without --llm)",
        description=(
            "Ingest each sample into the memory, retrieve per question and, with --llm, "
            "answer and judge. Prints a per-category table; writes results.jsonl, "
            "metrics.json and manifest.json into --out. A pre-flight check of the memory "
            "runs first. Exit status: 0 complete, 2 usage, configuration or pre-flight "
            f"error, {EXIT_INCOMPLETE} finished but incomplete (a memory or LLM call failed "
            "on some questions: recorded per question, excluded from the metrics)."
        ),
    )
    parser.add_argument("--dataset", default="locomo", help="dataset name (default: locomo)")
    parser.add_argument(
        "--data-path", default=None, help="dataset file or directory (default: resolved by name)"
    )
    parser.add_argument(
        "--memory",
        default="bm25",
        help="registered memory name or module:attr factory (default: bm25)",
    )
    parser.add_argument(
        "--memory-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument of the memory (repeatable; VALUE is JSON if it parses, "
        "else a string), e.g. --memory-arg k=20",
    )
    parser.add_argument(
        "--memory-timeout",
        type=_positive_float,
        default=None,
        metavar="S",
        help="fail a memory call that has not returned after S seconds (per call; default: "
        "no limit); the question is recorded as a memory error",
    )
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the pre-flight check of the memory (protocol shape and a quick kit pass)",
    )
    parser.add_argument(
        "--llm",
        choices=("anthropic", "openai"),
        default=None,
        help="answer with this provider (key and base URL from the SDK's environment variables)",
    )
    parser.add_argument("--model", default=None, help="model name (default: the provider's)")
    parser.add_argument(
        "--llm-cache",
        type=Path,
        default=None,
        metavar="PATH",
        help="answer repeated LLM requests from this SQLite file (created if missing)",
    )
    parser.add_argument("--limit", type=int, default=None, help="evaluate the first N samples")
    parser.add_argument(
        "--out", type=Path, default=None, help="run directory (default: runs/<UTC timestamp>)"
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
        help="judge the answers with the same LLM (default: on when --llm is given)",
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
        help="evaluate shard I of N (0 <= I < N; samples chosen by a hash of their id) "
        "into --out; join the N run directories with himga merge",
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
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


class RunDirectoryError(HimgaError, ValueError):
    """The run directory holds another run (or none to resume)."""


def run(args: argparse.Namespace) -> int:
    from himga._extras import MissingExtraError
    from himga.data import DatasetError, DatasetNotFoundError, UnknownDatasetError
    from himga.eval import CheckpointError
    from himga.llm import LLMConfigError
    from himga.memory import MemoryLoadError

    for needs_llm in ("model", "llm_cache"):
        if args.llm is None and getattr(args, needs_llm) is not None:
            print(f"himga eval: --{needs_llm.replace('_', '-')} needs --llm", file=sys.stderr)
            return 2
    if args.llm is None and args.judge:
        print("himga eval: --judge needs --llm", file=sys.stderr)
        return 2
    if args.ray is None and (args.workers is not None or args.worker_resource):
        print("himga eval: --workers and --worker-resource need --ray", file=sys.stderr)
        return 2
    for option in ("limit", "concurrency", "workers"):
        value = getattr(args, option)
        if value is not None and value < 1:
            print(f"himga eval: --{option} must be >= 1, got {value}", file=sys.stderr)
            return 2
    expected = (
        CheckpointError,
        DatasetError,
        DatasetNotFoundError,
        LLMConfigError,
        MemoryLoadError,
        MissingExtraError,
        RunDirectoryError,
        UnknownDatasetError,
    )
    with warnings.catch_warnings():
        # Dataset repairs (e.g. an evidence id naming no turn) as one line each.
        warnings.showwarning = _show_warning
        try:
            return _evaluate(args)
        except expected as exc:
            print(_redact(f"himga eval: error: {exc}"), file=sys.stderr)
            return 2


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"himga eval: {category.__name__}: {message}", file=sys.stderr)


def _evaluate(args: argparse.Namespace) -> int:
    from himga.data import load_dataset, resolve_dataset
    from himga.eval import AgentSpec, CheckpointMismatchError
    from himga.eval._shard import coverage
    from himga.eval.judge import JUDGE_PROMPTS
    from himga.memory import (
        BaseMemory,
        memory_provenance,
        parse_memory_arguments,
        resolve_memory,
    )

    started_at = _now()
    started = time.perf_counter()
    # Cheap failures (memory spec, pre-flight, API key) before the dataset is read or fetched.
    resolved = resolve_memory(args.memory, parse_memory_arguments(args.memory_arg))
    report = None
    if not args.no_preflight:
        report = preflight(resolved, timeout=args.memory_timeout)
        if report.failed is not None:
            _print_preflight_failure(args, report)
            return 2
        if report.limited:
            print(
                f"himga eval: pre-flight: only {', '.join(report.checked) or 'nothing'} "
                f"checked ({report.limited})",
                file=sys.stderr,
            )
    llm = None
    if args.llm is not None:
        from himga.llm import get_client

        llm = get_client(args.llm, model=args.model, cache=args.llm_cache)

    def create_memory() -> BaseMemory:
        memory = resolved.create()
        # A memory that builds with an LLM (MAGMA) uses the run's client, and its cache;
        # so does the fresh instance that replaces one stuck in a timed-out call.
        attach_llm = getattr(memory, "attach_llm", None)
        if llm is not None and callable(attach_llm):
            attach_llm(llm)
        return memory

    memory = create_memory()
    judging = llm is not None and args.judge is not False
    resolution = resolve_dataset(args.dataset, path=args.data_path)
    dataset_sha256 = _checksum(resolution.path)
    samples = load_dataset(args.dataset, path=resolution.path, limit=args.limit)
    covered = coverage(samples)
    if args.shard is not None:
        samples = args.shard.select(samples)
    out: Path = args.out or Path("runs") / started_at.replace(":", "").replace("-", "")
    agent = BaseAgent(memory=memory, llm=llm)
    provenance = memory_provenance(
        [resolved.target.partition(":")[0].strip(), type(memory).__module__]
    )
    judge_identity = None
    if judging:
        assert llm is not None
        temperature = getattr(llm, "temperature", None)
        judge_identity = {
            "provider": llm.provider,
            "model": llm.model,
            "temperature": temperature if isinstance(temperature, (int, float)) else None,
            "prompt_hashes": _hashes(JUDGE_PROMPTS),
        }
    spec = AgentSpec(
        memory=args.memory, memory_arguments=resolved.arguments, llm=args.llm, model=args.model
    )
    identity = spec.run_identity(
        agent, judge=judge_identity, dataset=args.dataset, dataset_sha256=dataset_sha256
    )
    checkpoint = out / "checkpoint.jsonl"
    _prepare_run_directory(args, out, checkpoint)
    keys = {(s.sample_id, qa.question_id) for s in samples for qa in s.qa_pairs}
    resumed = _resumable(checkpoint, identity, keys) if args.resume else 0
    if resumed:
        print(f"resumed {resumed} of {len(keys)} results from the checkpoint")
    show = not args.no_progress
    if args.shard is not None:
        _write_json(out / "shard.json", {"shard": str(args.shard), "covers": covered})
    try:
        if args.ray is not None:
            results = run_eval(
                samples,
                agent=spec,
                executor=_ray_executor(args),
                show_progress=show,
                checkpoint=checkpoint,
                memory_timeout=args.memory_timeout,
                identity=identity,
            )
        else:
            results = run_eval(
                samples,
                agent=agent,
                show_progress=show,
                checkpoint=checkpoint,
                max_concurrency=args.concurrency,
                memory_timeout=args.memory_timeout,
                memory_factory=create_memory,
                identity=identity,
            )
    except CheckpointMismatchError as exc:
        raise RunDirectoryError(f"{exc}; rerun with --fresh to start over in {out}") from exc
    judge: JudgeScores | None = None
    if judging:
        assert llm is not None
        # Verdicts persist beside the checkpoint, so a resumed run re-asks none.
        cache_file = out / "judge_cache.json"
        cache = json.loads(cache_file.read_text("utf-8")) if cache_file.exists() else {}
        judge = batch_judge(
            results, llm=llm, cache=cache, show_progress=show, max_concurrency=args.concurrency
        )
        cache_file.write_text(json.dumps(cache), "utf-8")
    metrics = compute_metrics(results, judge)
    wall = time.perf_counter() - started

    _write_results(out / "results.jsonl", results, judge)
    _write_json(out / "metrics.json", metrics)
    arguments = {
        name: value if value is None or isinstance(value, (int, float, bool)) else str(value)
        for name, value in sorted(vars(args).items())
        if name not in ("handler", "command", "memory_arg", "worker_resource")
    }
    arguments["judge"] = judge is not None
    manifest = {
        "himga_version": himga.__version__,
        "arguments": arguments,
        "started_at": started_at,
        "finished_at": _now(),
        "wall_time_s": round(wall, 3),
        "dataset": {
            "name": args.dataset,
            "path": str(resolution.path),
            "sha256": dataset_sha256,
            "limit": args.limit,
            "samples": len(samples),
            "questions": len(results),
        },
        "memory": {
            "spec": args.memory,
            "target": resolved.target,
            "arguments": dict(resolved.arguments),
            "class": f"{type(memory).__module__}:{type(memory).__qualname__}",
            "repr": memory_config(memory),
            "distribution": provenance.distribution,
            "version": provenance.version,
            "source_sha256": provenance.source_sha256,
            "source_files": len(provenance.files),
            "timeout_s": args.memory_timeout,
        },
        "preflight": None if report is None else report.describe(),
        "run_identity": identity.fingerprint,
        "shard": None
        if args.shard is None
        else {"index": args.shard.index, "count": args.shard.count, "file": "shard.json"},
        "resumed": resumed,
        "llm": _describe_llm(llm, args.concurrency),
        "prompt_hashes": {"answer": prompt_hashes()},
        "judge": None if judge is None else judge.describe(),
        "tokens": {
            "answer_input": sum(r.input_tokens for r in results),
            "answer_output": sum(r.output_tokens for r in results),
            "client_usage_this_invocation": _usage(llm),
        },
        "counts": metrics["counts"],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if judge is not None:
        manifest["prompt_hashes"]["judge"] = judge.prompt_hashes
    _write_json(out / "manifest.json", manifest)
    print(_redact(format_table(metrics)))
    counts = metrics["counts"]
    print(
        f"{counts['questions']} questions, {counts['memory_errors']} memory errors, "
        f"{counts['answered']} answered, {counts['errors']} LLM errors; "
        f"wrote {out}/results.jsonl, metrics.json, manifest.json"
    )
    for failure in metrics["memory_errors"][:3]:
        print(
            _redact(
                f"memory error: {failure['sample_id']} {failure['question_id']}: "
                f"{failure['method']} raised {failure['type']}: {failure['message']}"
            ),
            file=sys.stderr,
        )
    if counts["memory_errors"]:
        print(
            f"himga eval: incomplete: {counts['memory_errors']} questions failed in the memory "
            f"(listed in metrics.json, excluded from the metrics)",
            file=sys.stderr,
        )
    for error in metrics["errors"][:3]:
        # Failed calls are reported, never scored; rerunning with --resume retries them.
        print(
            _redact(f"error: {error['sample_id']} {error['question_id']}: {error['error']}"),
            file=sys.stderr,
        )
    if counts["errors"]:
        print(
            f"himga eval: incomplete: {counts['errors']} LLM calls failed after retries "
            f"(listed in metrics.json); rerun with --out {out} --resume to retry them",
            file=sys.stderr,
        )
    return EXIT_INCOMPLETE if counts["errors"] or counts["memory_errors"] else 0


def _ray_executor(args: argparse.Namespace) -> Any:
    from himga.eval import RayExecutor

    if args.worker_resource:
        return RayExecutor(
            address=args.ray,
            num_workers=args.workers or 2,
            llm_concurrency_total=args.concurrency,
            worker_resources=dict(args.worker_resource),
        )
    return RayExecutor(
        address=args.ray, num_workers=args.workers or 2, llm_concurrency_total=args.concurrency
    )


def _print_preflight_failure(args: argparse.Namespace, report: PreflightReport) -> None:
    lines = [f"himga eval: pre-flight failed: memory {args.memory!r} breaks [{report.failed}]:"]
    lines.append(f"  {report.problem}")
    if report.reproducer:
        lines.append("  minimal reproducer:")
        lines += [f"      {line}" for line in report.reproducer.splitlines()]
    lines.append(
        f"  see every contract: himga check {args.memory}  (or skip this check: --no-preflight)"
    )
    print(_redact("\n".join(lines)), file=sys.stderr)


def _prepare_run_directory(args: argparse.Namespace, out: Path, checkpoint: Path) -> None:
    """Refuse to mix runs: an existing run needs --resume or --fresh; --fresh clears it."""
    exists = checkpoint.is_file()
    if args.fresh:
        for name in _RUN_FILES:
            (out / name).unlink(missing_ok=True)
    elif args.resume and not exists:
        raise RunDirectoryError(f"--resume: {out} holds no run to resume (no {checkpoint.name})")
    elif exists and not args.resume:
        raise RunDirectoryError(
            f"{out} already holds a run: pass --resume to continue it or --fresh to start over"
        )
    out.mkdir(parents=True, exist_ok=True)


def _resumable(checkpoint: Path, identity: RunIdentity, keys: set[tuple[str, str]]) -> int:
    """How many of ``keys`` the checkpoint holds finished; raises if it is another run's."""
    from himga.eval import CheckpointMismatchError
    from himga.eval._checkpoint import Checkpoint

    store = Checkpoint(checkpoint, identity.to_dict())
    try:
        done = store.open()
    except CheckpointMismatchError as exc:
        raise RunDirectoryError(
            f"{exc}; rerun with --fresh to start over in {checkpoint.parent}"
        ) from exc
    finally:
        store.close()
    return sum(
        key in keys and r.error is None and r.memory_error is None for key, r in done.items()
    )


def _hashes(templates: Mapping[str, str]) -> dict[str, str]:
    return {
        name: hashlib.sha256(text.encode("utf-8")).hexdigest()
        for name, text in sorted(templates.items())
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _checksum(path: Path) -> str:
    """SHA-256 of the dataset file; of its files' names and bytes, sorted, for a directory."""
    digest = hashlib.sha256()
    single = path.is_file()
    files = [path] if single else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if not single:
            digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _describe_llm(llm: Any, concurrency: int | None) -> dict[str, Any] | None:
    if llm is None:
        return None
    base_url = getattr(llm, "base_url", None)
    return {
        "provider": llm.provider,
        "model": llm.model,
        "base_url": public_url(base_url) if isinstance(base_url, str) else None,
        "temperature": getattr(llm, "temperature", None),
        "max_retries": getattr(llm, "max_retries", None),
        "max_concurrency": concurrency or llm.max_concurrency,
        "cache": _cache_stats(llm),
    }


def _cache_stats(llm: Any) -> dict[str, Any] | None:
    """The ``--llm-cache`` file and this invocation's hits and misses, if a cache is on."""
    stats = getattr(llm, "cache_stats", None)
    if not dataclasses.is_dataclass(stats) or isinstance(stats, type):
        return None
    return dataclasses.asdict(stats)


def _usage(llm: Any) -> dict[str, Any] | None:
    """The client's own call and token totals (``SDKClient.usage``), if it keeps them."""
    usage = getattr(llm, "usage", None)
    if not dataclasses.is_dataclass(usage) or isinstance(usage, type):
        return None
    return dataclasses.asdict(usage)


def _redact(text: str) -> str:
    for name in _SECRET_ENV:
        secret = os.environ.get(name)
        if secret:
            text = text.replace(secret, "***")
    return text


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(_redact(json.dumps(data, indent=2, ensure_ascii=False)) + "\n", "utf-8")


def _write_results(path: Path, results: Sequence[EvalResult], judge: JudgeScores | None) -> None:
    with path.open("w", encoding="utf-8") as file:
        for index, result in enumerate(results):
            record = result.to_dict()
            if judge is not None:
                score = judge[index]
                record["judge"] = None if score != score else score  # NaN -> null
                record["judge_error"] = judge.errors.get(index)
            file.write(_redact(json.dumps(record, ensure_ascii=False)) + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_table(metrics: Mapping[str, Any]) -> str:
    """The per-category table of :func:`~himga.eval.compute_metrics` output, as text.

    Columns without a value in any row (e.g. answer metrics of an offline run)
    are left out, and so is ``mem-err`` (questions a memory call failed on,
    excluded from the row's metrics) when no question failed.
    """
    columns = [
        ("n", "questions"),
        ("mem-err", "memory_errors"),
        ("errors", "errors"),
        ("judge", "judge"),
        ("F1", "f1"),
        ("BLEU-1", "bleu1"),
        ("ctx-any", "context_recall_any"),
        ("ctx-all", "context_recall_all"),
        *((f"R@{k}", f"recall@{k}") for k in RANK_KS if k in (5, 10, 25, 50)),
    ]
    rows: list[tuple[str, Mapping[str, Any]]] = [
        (name, block) for name, block in metrics["by_category"].items()
    ]
    rows.append(("overall (no adversarial)", metrics["overall"]))
    rows.append(("overall (all)", metrics["overall_with_adversarial"]))
    shown = [
        (title, key)
        for title, key in columns
        if key in ("questions", "errors")
        or (key == "memory_errors" and any(block.get(key) for _, block in rows))
        or (key != "memory_errors" and any(block.get(key) is not None for _, block in rows))
    ]
    table = [["category", *(title for title, _ in shown)]]
    table += [[name, *(_cell(block.get(key)) for _, key in shown)] for name, block in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in table
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)

"""``himga merge``: join the shard run directories of one run into the run directory of it."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from himga._errors import HimgaError

__all__ = ["PER_RUN_FIELDS", "MergeError", "merge_runs", "register", "run"]

#: Manifest fields that describe one invocation rather than the run's content:
#: a merged manifest equals a single local run's except in these. A merged run
#: takes the earliest ``started_at``, latest ``finished_at``, summed
#: ``wall_time_s`` and ``resumed``, and shard 0's value of the others; every
#: shard's own values are kept in ``merge.json``.
PER_RUN_FIELDS = (
    "started_at",
    "finished_at",
    "wall_time_s",
    "resumed",
    "arguments.out",
    "arguments.shard",
    "arguments.resume",
    "arguments.fresh",
    "arguments.no_progress",
    "arguments.ray",
    "arguments.workers",
    "arguments.concurrency",
    "llm.max_concurrency",
    "preflight",
    "tokens.client_usage_this_invocation",
    "python",
    "platform",
)


class MergeError(HimgaError, ValueError):
    """The shard runs do not make one complete run (the message says which and why)."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "merge",
        help="join the run directories of himga eval --shard I/N into one run",
        description=(
            "Check that the shard runs share one run identity and dataset, that together "
            "they hold every question exactly once, and write one run directory with the "
            "content of a single run (results in dataset order, metrics recomputed). "
            "Exit status: 0 merged, 2 the shards do not make one complete run."
        ),
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="shard run directories")
    parser.add_argument("--out", type=Path, required=True, help="merged run directory (new)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from himga._cli._runs import RunReadError

    try:
        merged = merge_runs(args.runs, args.out)
    except (MergeError, RunReadError) as exc:
        print(f"himga merge: error: {exc}", file=sys.stderr)
        return 2
    print(f"merged {len(args.runs)} shards: {merged} questions; wrote {args.out}")
    return 0


def _json(path: Path) -> Any:
    from himga._cli._runs import RunReadError

    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise RunReadError(
            f"{path}: missing (is {path.parent} a himga eval --shard run?)"
        ) from None
    except json.JSONDecodeError as exc:
        raise RunReadError(f"{path}: invalid JSON: {exc}") from exc


def _lines(path: Path) -> list[dict[str, Any]]:
    from himga._cli._runs import RunReadError

    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise RunReadError(f"{path}: missing (is {path.parent} a himga eval run?)") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise RunReadError(f"{path}:{number}: invalid JSON: {exc}") from exc
    return records


def _listed(keys: Sequence[tuple[str, str]]) -> str:
    shown = ", ".join(f"{s}/{q}" for s, q in keys[:10])
    return shown + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")


def merge_runs(paths: Sequence[Path], out: Path) -> int:
    """Merge the shard runs ``paths`` into the new run directory ``out``; the question count.

    Refuses (:class:`MergeError`) runs that are not shards, shards of different
    counts, a shard given twice or missing, different run identities
    (``run_identity`` fingerprint) or datasets (name, SHA-256, ``--limit`` and
    the samples and questions covered), a question held twice, missing, or held
    by the wrong shard, and an ``out`` that already holds files.
    """
    from himga.eval import CheckpointMismatchError, RunIdentity
    from himga.eval._shard import Shard

    if out.exists() and any(out.iterdir()):
        raise MergeError(f"{out} is not empty: merge writes a new run directory")
    shards: dict[int, Path] = {}
    manifests: dict[int, dict[str, Any]] = {}
    covers: list[dict[str, Any]] | None = None
    first: Path | None = None
    for path in paths:
        manifest = _json(path / "manifest.json")
        shard = manifest.get("shard")
        if not isinstance(shard, dict):
            raise MergeError(f"{path} is not a shard run (made without himga eval --shard)")
        index, count = shard["index"], shard["count"]
        if index in shards:
            raise MergeError(f"shard {index}/{count} is given twice: {shards[index]} and {path}")
        shards[index], manifests[index] = path, manifest
        cover = _json(path / "shard.json")["covers"]
        if first is None:
            first, covers = path, cover
            reference = manifest
            continue
        if count != reference["shard"]["count"]:
            raise MergeError(
                f"{path} is a shard of {count}, {first} of {reference['shard']['count']}"
            )
        if manifest["run_identity"] != reference["run_identity"]:
            ours = RunIdentity.from_dict(_lines(first / "checkpoint.jsonl")[0]["run"])
            theirs = RunIdentity.from_dict(_lines(path / "checkpoint.jsonl")[0]["run"])
            raise MergeError(
                f"{path} and {first} are not shards of one run: their run identities differ in "
                f"{'; '.join(ours.differences(theirs)) or 'the fingerprint'}"
            )
        for field in ("name", "sha256", "limit"):
            if manifest["dataset"][field] != reference["dataset"][field]:
                raise MergeError(
                    f"{path} and {first} ran on different data: dataset {field} "
                    f"{manifest['dataset'][field]!r} != {reference['dataset'][field]!r}"
                )
        if cover != covers:
            raise MergeError(f"{path} and {first} cover different samples or questions")
    assert first is not None
    assert covers is not None
    count = reference["shard"]["count"]
    absent = sorted(set(range(count)) - set(shards))
    if absent:
        raise MergeError(
            f"shard(s) {', '.join(f'{i}/{count}' for i in absent)} missing: got only "
            f"{', '.join(f'{i}/{count}' for i in sorted(shards))}"
        )
    held: dict[tuple[str, str], dict[str, Any]] = {}
    where: dict[tuple[str, str], Path] = {}
    lines: dict[tuple[str, str], dict[str, Any]] = {}
    header = None
    caches: dict[str, Any] = {}
    for index in sorted(shards):
        path = shards[index]
        shard = Shard(index, count)
        for record in _lines(path / "results.jsonl"):
            key = (str(record["sample_id"]), str(record["question_id"]))
            if key in held:
                raise MergeError(f"question {_listed([key])} appears twice: {where[key]}, {path}")
            if not shard.contains(key[0]):
                raise MergeError(
                    f"{path} (shard {shard}) holds {_listed([key])}, which is shard "
                    f"{Shard.of(key[0], count)}/{count}'s"
                )
            held[key], where[key] = record, path
        checkpoint = _lines(path / "checkpoint.jsonl")
        if header is None:
            header = checkpoint[0]
        elif checkpoint[0] != header:
            raise CheckpointMismatchError(f"{path}: checkpoint header differs from {first}'s")
        for line in checkpoint[1:]:
            lines[(line["sample_id"], line["question_id"])] = line  # a later line supersedes
        cache_file = path / "judge_cache.json"
        if cache_file.exists():
            caches.update(_json(cache_file))
    order = [(c["sample_id"], q) for c in covers for q in c["question_ids"]]
    missing = [key for key in order if key not in held]
    if missing:
        raise MergeError(f"{len(missing)} question(s) missing from every shard: {_listed(missing)}")
    extra = sorted(set(held) - set(order))
    if extra:
        raise MergeError(f"question(s) that no shard covers: {_listed(extra)}")
    _write(out, order, held, lines, header, caches, manifests, shards, len(covers))
    return len(order)


def _write(
    out: Path,
    order: list[tuple[str, str]],
    held: Mapping[tuple[str, str], dict[str, Any]],
    lines: Mapping[tuple[str, str], dict[str, Any]],
    header: Mapping[str, Any] | None,
    caches: Mapping[str, Any],
    manifests: Mapping[int, dict[str, Any]],
    shards: Mapping[int, Path],
    samples: int,
) -> None:
    from himga._cli._eval import _write_json
    from himga.eval import EvalResult, JudgeScores, compute_metrics

    out.mkdir(parents=True, exist_ok=True)
    records = [held[key] for key in order]
    results = [EvalResult.from_dict(record) for record in records]
    reference = manifests[min(manifests)]
    judge = None
    if reference.get("judge") is not None:
        described = reference["judge"]
        errors = {i: r["judge_error"] for i, r in enumerate(records) if r.get("judge_error")}
        judge = JudgeScores(
            [math.nan if r.get("judge") is None else float(r["judge"]) for r in records],
            provider=described["provider"],
            model=described["model"],
            temperature=described["temperature"],
            prompt_hashes=described["prompt_hashes"],
            errors=errors,
        )
    metrics = compute_metrics(results, judge)
    with (out / "results.jsonl").open("w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    _write_json(out / "metrics.json", metrics)
    with (out / "checkpoint.jsonl").open("w", encoding="utf-8") as file:
        file.write(json.dumps(header, ensure_ascii=False) + "\n")
        for key in order:
            file.write(json.dumps(lines[key], ensure_ascii=False) + "\n")
    if caches:
        (out / "judge_cache.json").write_text(json.dumps(caches), "utf-8")
    manifest = json.loads(json.dumps(reference))
    every = [manifests[i] for i in sorted(manifests)]
    manifest["started_at"] = min(m["started_at"] for m in every)
    manifest["finished_at"] = max(m["finished_at"] for m in every)
    manifest["wall_time_s"] = round(sum(m["wall_time_s"] for m in every), 3)
    manifest["resumed"] = sum(m["resumed"] for m in every)
    manifest["arguments"]["out"] = str(out)
    manifest["arguments"]["shard"] = None
    manifest["shard"] = None
    manifest["dataset"]["samples"] = samples
    manifest["dataset"]["questions"] = len(results)
    manifest["counts"] = metrics["counts"]
    if judge is not None:
        manifest["judge"] = judge.describe()
    manifest["tokens"]["answer_input"] = sum(r.input_tokens for r in results)
    manifest["tokens"]["answer_output"] = sum(r.output_tokens for r in results)
    manifest["tokens"]["client_usage_this_invocation"] = None
    _write_json(out / "manifest.json", manifest)
    per_run = [
        {
            "path": str(shards[i]),
            "shard": f"{i}/{len(manifests)}",
            **{
                name: manifests[i].get(name)
                for name in ("started_at", "finished_at", "wall_time_s", "resumed", "python")
            },
            "platform": manifests[i].get("platform"),
            "client_usage": manifests[i]["tokens"].get("client_usage_this_invocation"),
        }
        for i in sorted(manifests)
    ]
    _write_json(out / "merge.json", {"merged_from": per_run})

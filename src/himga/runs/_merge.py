"""Merging shard runs (``himga eval --shard I/N``) into the run directory of the whole run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from himga._errors import HimgaError
from himga.benchmarks._judge_prompts import OFFICIAL
from himga.eval import (
    CheckpointMismatchError,
    EvalResult,
    JudgeScores,
    RunIdentity,
    compute_metrics,
)
from himga.eval._shard import Shard
from himga.metering import CALLS_FILE, CostSummary
from himga.runs._files import write_jsonl, write_text_atomic
from himga.runs._judge import judge_entry
from himga.runs._manifest import MANIFEST_FORMAT, CostsInfo, Manifest
from himga.runs._records import read_jsonl
from himga.runs._rundir import JUDGE_CACHE, RunDir, RunReadError
from himga.runs._verdicts import VERDICTS

__all__ = ["PER_RUN_FIELDS", "MergeError", "merge_runs"]

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
    "results_sha256",  # results.jsonl holds each question's measured latencies
    # What was spent: calls.jsonl of every part, so a resumed or sharded run, which
    # redoes an interrupted sample's work, costs more than one straight run.
    "costs.phases",
    "costs.models",
    # Each shard's own earlier invocations are in merge.json.
    "history",
)


class MergeError(HimgaError, ValueError):
    """The shard runs do not make one complete run (the message says which and why)."""


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
    if out.exists() and not out.is_dir():
        raise MergeError(f"{out} is a file: merge writes a new run directory")
    if out.exists() and any(out.iterdir()):
        raise MergeError(f"{out} is not empty: merge writes a new run directory")
    shards: dict[int, Path] = {}
    manifests: dict[int, Manifest] = {}
    covers: list[dict[str, Any]] | None = None
    first: Path | None = None
    reference: Manifest | None = None
    for path in paths:
        run_dir = RunDir(path)
        manifest = run_dir.read_manifest()
        run_dir.verify_results(manifest)
        shard = manifest.shard
        if shard is None:
            raise MergeError(f"{path} is not a shard run (made without himga eval --shard)")
        index, count = shard.index, shard.count
        if index in shards:
            raise MergeError(
                f"shard {Shard(index, count)} is given twice: {shards[index]} and {path}"
            )
        shards[index], manifests[index] = path, manifest
        cover = _covers(run_dir)
        if first is None or reference is None:
            first, covers = path, cover
            reference = manifest
            continue
        assert reference.shard is not None
        if count != reference.shard.count:
            raise MergeError(f"{path} is a shard of {count}, {first} of {reference.shard.count}")
        if manifest.run_identity != reference.run_identity:
            ours = RunIdentity.from_dict(RunDir(first).read_records("checkpoint.jsonl")[0]["run"])
            theirs = RunIdentity.from_dict(run_dir.read_records("checkpoint.jsonl")[0]["run"])
            raise MergeError(
                f"{path} and {first} are not shards of one run: their run identities differ in "
                f"{'; '.join(ours.differences(theirs)) or 'the fingerprint'}"
            )
        for field in ("name", "sha256", "limit"):
            theirs_value = getattr(manifest.dataset, field)
            ours_value = getattr(reference.dataset, field)
            if theirs_value != ours_value:
                raise MergeError(
                    f"{path} and {first} ran on different data: dataset {field} "
                    f"{theirs_value!r} != {ours_value!r}"
                )
        if cover != covers:
            raise MergeError(f"{path} and {first} cover different samples or questions")
    assert first is not None
    assert covers is not None
    assert reference is not None
    assert reference.shard is not None
    count = reference.shard.count
    absent = sorted(set(range(count)) - set(shards))
    if absent:
        raise MergeError(
            f"shard(s) {', '.join(str(Shard(i, count)) for i in absent)} missing: got only "
            f"{', '.join(str(Shard(i, count)) for i in sorted(shards))}"
        )
    held: dict[tuple[str, str], dict[str, Any]] = {}
    where: dict[tuple[str, str], Path] = {}
    lines: dict[tuple[str, str], dict[str, Any]] = {}
    header = None
    caches: dict[str, Any] = {}
    verdicts: list[Any] = []
    calls: list[bytes] = []
    for index in sorted(shards):
        path = shards[index]
        part = Shard(index, count)
        run_dir = RunDir(path)
        for record in run_dir.read_records():
            key = (str(record["sample_id"]), str(record["question_id"]))
            if key in held:
                raise MergeError(f"question {_listed([key])} appears twice: {where[key]}, {path}")
            if not part.contains(key[0]):
                raise MergeError(
                    f"{path} (shard {part}) holds {_listed([key])}, which is shard "
                    f"{Shard(Shard.of(key[0], count), count)}'s"
                )
            held[key], where[key] = record, path
        checkpoint = run_dir.read_records("checkpoint.jsonl")
        if not checkpoint:
            raise MergeError(f"{run_dir.checkpoint}: empty (no checkpoint header)")
        if header is None:
            header = checkpoint[0]
        elif checkpoint[0] != header:
            raise CheckpointMismatchError(f"{path}: checkpoint header differs from {first}'s")
        for number, line in enumerate(checkpoint[1:], start=2):
            sample_id, question_id = line.get("sample_id"), line.get("question_id")
            if not isinstance(sample_id, str) or not isinstance(question_id, str):
                raise MergeError(f"{run_dir.checkpoint}:{number}: no sample_id and question_id")
            lines[(sample_id, question_id)] = line  # a later line supersedes
        if run_dir.file(JUDGE_CACHE).exists():
            cache = run_dir.read_json(JUDGE_CACHE)
            if not isinstance(cache, dict):
                raise MergeError(f"{run_dir.file(JUDGE_CACHE)}: expected a JSON object")
            caches.update(cache)
        # Verdicts and scores, not a shard's start lines: they name the shard's answers.
        verdicts += [
            line
            for line in read_jsonl(run_dir.file(VERDICTS), on_damage=_damaged)
            if not (isinstance(line, dict) and "started" in line)
        ]
        if run_dir.file(CALLS_FILE).exists():
            calls.append(run_dir.file(CALLS_FILE).read_bytes())
    order = [(c["sample_id"], q) for c in covers for q in c["question_ids"]]
    missing = [key for key in order if key not in held]
    if missing:
        raise MergeError(f"{len(missing)} question(s) missing from every shard: {_listed(missing)}")
    extra = sorted(set(held) - set(order))
    if extra:
        raise MergeError(f"question(s) that no shard covers: {_listed(extra)}")
    _write(
        out, order, held, lines, header, (caches, verdicts), calls, manifests, shards, len(covers)
    )
    return len(order)


def _damaged(problem: str) -> None:
    raise MergeError(problem)


def _summed_costs(manifests: Sequence[Manifest]) -> CostsInfo | None:
    """Every shard's costs summed per phase; ``None`` unless every shard counted them."""
    counted = [m.costs for m in manifests if m.costs is not None]
    if len(counted) < len(manifests):
        return None
    endpoints = dict.fromkeys(url for costs in counted for url in costs.memory_endpoints)
    return CostsInfo(
        CostSummary.summed(costs.phases for costs in counted),
        tuple(endpoints),
        next((c.answer_endpoint for c in counted if c.answer_endpoint is not None), None),
        next((c.judge_endpoint for c in counted if c.judge_endpoint is not None), None),
    )


def _covers(run_dir: RunDir) -> list[dict[str, Any]]:
    covers = run_dir.read_json("shard.json")
    if not isinstance(covers, dict) or not isinstance(covers.get("covers"), list):
        raise RunReadError(f"{run_dir.file('shard.json')}: expected an object with 'covers'")
    found: list[dict[str, Any]] = covers["covers"]
    return found


def _write(
    out: Path,
    order: list[tuple[str, str]],
    held: Mapping[tuple[str, str], dict[str, Any]],
    lines: Mapping[tuple[str, str], dict[str, Any]],
    header: Mapping[str, Any] | None,
    judged: tuple[Mapping[str, Any], Sequence[Any]],
    calls: Sequence[bytes],
    manifests: Mapping[int, Manifest],
    shards: Mapping[int, Path],
    samples: int,
) -> None:
    records = [held[key] for key in order]
    results = [EvalResult.from_dict(record) for record in records]
    reference = manifests[min(manifests)]
    judge = None
    if reference.judge is not None:
        described = reference.judge
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
    with RunDir(out) as run_dir:
        run_dir.claim()
        checksum = run_dir.write_results(records)
        run_dir.write_json("metrics.json", metrics)
        checkpoint = [dict(header or {}), *(lines[key] for key in order)]

        write_jsonl(run_dir.checkpoint, checkpoint)
        caches, verdicts = judged
        if caches:
            run_dir.write_json(JUDGE_CACHE, caches)
        if verdicts:
            write_jsonl(run_dir.file(VERDICTS), verdicts)
        if calls:
            # Without a line a shard's process may have died writing (it counts no call).
            joined = b"".join(part[: part.rfind(b"\n") + 1] for part in calls)
            write_text_atomic(run_dir.file(CALLS_FILE), joined.decode("utf-8"))
        every = [manifests[i] for i in sorted(manifests)]
        tokens = dict(reference.tokens)
        tokens["answer_input"] = sum(r.input_tokens for r in results)
        tokens["answer_output"] = sum(r.output_tokens for r in results)
        tokens["client_usage_this_invocation"] = None
        manifest = dataclasses.replace(
            reference,
            started_at=min(m.started_at for m in every),
            finished_at=max(m.finished_at for m in every),
            wall_time_s=round(sum(m.wall_time_s for m in every), 3),
            resumed=sum(m.resumed for m in every),
            arguments={**reference.arguments, "out": str(out), "shard": None},
            shard=None,
            dataset=dataclasses.replace(reference.dataset, samples=samples, questions=len(results)),
            counts=metrics["counts"],
            # The judge's server and whether it was apart are the shards' own record.
            judge=reference.judge
            if judge is None
            else {**(reference.judge or {}), **judge.describe()},
            judges=()
            if judge is None
            else (
                judge_entry(
                    judge,
                    prompt=OFFICIAL,
                    base_url=(reference.judge or {}).get("base_url"),
                    results=results,
                    source="results",
                ),
            ),
            tokens=tokens,
            results_sha256=checksum,
            costs=_summed_costs(every),
            history=(),
            format=MANIFEST_FORMAT,
        )
        run_dir.write_manifest(manifest)
        per_run = [
            {
                "path": str(shards[i]),
                "shard": str(Shard(i, len(manifests))),
                "started_at": manifests[i].started_at,
                "finished_at": manifests[i].finished_at,
                "wall_time_s": manifests[i].wall_time_s,
                "resumed": manifests[i].resumed,
                "python": manifests[i].python,
                "platform": manifests[i].platform,
                "client_usage": manifests[i].tokens.get("client_usage_this_invocation"),
                "history": [dict(record) for record in manifests[i].history],
            }
            for i in sorted(manifests)
        ]
        run_dir.write_json("merge.json", {"merged_from": per_run})

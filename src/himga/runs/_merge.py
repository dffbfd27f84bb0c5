"""Merging shard runs (``himga eval --shard I/N``) into the run directory of the whole run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class _Shards:
    """The shard runs given, checked to be the parts of one run: each one's ``paths`` and
    ``manifests`` by shard index, the ``first`` given, what it ``covers`` (every shard's
    ``shard.json``, the same for all) and the shard ``count``."""

    paths: dict[int, Path]
    manifests: dict[int, Manifest]
    first: Path
    covers: list[dict[str, Any]]
    count: int


@dataclass
class _Parts:
    """What the shards hold, gathered in shard order: each question's result record
    (``held``) and the shard it came from (``where``), its checkpoint line (``lines``; a
    later line supersedes), the checkpoint ``header``, the legacy judge ``caches``, the
    ``verdicts`` and each shard's ``calls.jsonl`` bytes."""

    held: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    where: dict[tuple[str, str], Path] = field(default_factory=dict)
    lines: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    header: dict[str, Any] | None = None
    caches: dict[str, Any] = field(default_factory=dict)
    verdicts: list[Any] = field(default_factory=list)
    calls: list[bytes] = field(default_factory=list)


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
    shards = _shards(paths)
    parts = _Parts()
    for index in sorted(shards.paths):
        _gather(parts, shards.paths[index], Shard(index, shards.count), shards.first)
    order = [(c["sample_id"], q) for c in shards.covers for q in c["question_ids"]]
    missing = [key for key in order if key not in parts.held]
    if missing:
        raise MergeError(f"{len(missing)} question(s) missing from every shard: {_listed(missing)}")
    extra = sorted(set(parts.held) - set(order))
    if extra:
        raise MergeError(f"question(s) that no shard covers: {_listed(extra)}")
    _write(out, order, parts, shards)
    return len(order)


def _shards(paths: Sequence[Path]) -> _Shards:
    """Read and check the manifests of ``paths``: each a verified shard run, no shard given
    twice, all of one run (:func:`_check_alike` with the first), none missing."""
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
        if shard.index in shards:
            raise MergeError(
                f"shard {Shard(shard.index, shard.count)} is given twice: "
                f"{shards[shard.index]} and {path}"
            )
        shards[shard.index], manifests[shard.index] = path, manifest
        cover = _covers(run_dir)
        if first is None or reference is None or covers is None:
            first, covers, reference = path, cover, manifest
            continue
        _check_alike(path, run_dir, manifest, cover, first, reference, covers)
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
    return _Shards(shards, manifests, first, covers, count)


def _check_alike(
    path: Path,
    run_dir: RunDir,
    manifest: Manifest,
    cover: list[dict[str, Any]],
    first: Path,
    reference: Manifest,
    covers: list[dict[str, Any]],
) -> None:
    """Refuse the shard ``path`` unless it is a part of the same run as ``first`` (whose
    manifest is ``reference``): as many shards, one run identity, one dataset, the same
    samples and questions covered."""
    assert manifest.shard is not None
    assert reference.shard is not None
    count = manifest.shard.count
    if count != reference.shard.count:
        raise MergeError(f"{path} is a shard of {count}, {first} of {reference.shard.count}")
    if manifest.run_identity != reference.run_identity:
        # The fingerprints only tell that they differ; the checkpoints' headers say in what.
        ours = RunIdentity.from_dict(RunDir(first).read_records("checkpoint.jsonl")[0]["run"])
        theirs = RunIdentity.from_dict(run_dir.read_records("checkpoint.jsonl")[0]["run"])
        raise MergeError(
            f"{path} and {first} are not shards of one run: their run identities differ in "
            f"{'; '.join(ours.differences(theirs)) or 'the fingerprint'}"
        )
    for name in ("name", "sha256", "limit"):
        theirs_value = getattr(manifest.dataset, name)
        ours_value = getattr(reference.dataset, name)
        if theirs_value != ours_value:
            raise MergeError(
                f"{path} and {first} ran on different data: dataset {name} "
                f"{theirs_value!r} != {ours_value!r}"
            )
    if cover != covers:
        raise MergeError(f"{path} and {first} cover different samples or questions")


def _gather(parts: _Parts, path: Path, part: Shard, first: Path) -> None:
    """Add what the shard run ``path`` (the shard ``part``) holds to ``parts``: its results
    (refusing a question held twice or by the wrong shard), its checkpoint (refusing one
    of another header than ``first``'s), its judge cache and verdicts, and its calls."""
    run_dir = RunDir(path)
    for record in run_dir.read_records():
        key = (str(record["sample_id"]), str(record["question_id"]))
        if key in parts.held:
            raise MergeError(f"question {_listed([key])} appears twice: {parts.where[key]}, {path}")
        if not part.contains(key[0]):
            raise MergeError(
                f"{path} (shard {part}) holds {_listed([key])}, which is shard "
                f"{Shard(Shard.of(key[0], part.count), part.count)}'s"
            )
        parts.held[key], parts.where[key] = record, path
    checkpoint = run_dir.read_records("checkpoint.jsonl")
    if not checkpoint:
        raise MergeError(f"{run_dir.checkpoint}: empty (no checkpoint header)")
    if parts.header is None:
        parts.header = checkpoint[0]
    elif checkpoint[0] != parts.header:
        raise CheckpointMismatchError(f"{path}: checkpoint header differs from {first}'s")
    for number, line in enumerate(checkpoint[1:], start=2):
        sample_id, question_id = line.get("sample_id"), line.get("question_id")
        if not isinstance(sample_id, str) or not isinstance(question_id, str):
            raise MergeError(f"{run_dir.checkpoint}:{number}: no sample_id and question_id")
        parts.lines[(sample_id, question_id)] = line  # a later line supersedes
    if run_dir.file(JUDGE_CACHE).exists():
        cache = run_dir.read_json(JUDGE_CACHE)
        if not isinstance(cache, dict):
            raise MergeError(f"{run_dir.file(JUDGE_CACHE)}: expected a JSON object")
        parts.caches.update(cache)
    # Verdicts and scores, not a shard's start lines: they name the shard's answers.
    parts.verdicts += [
        line
        for line in read_jsonl(run_dir.file(VERDICTS), on_damage=_damaged)
        if not (isinstance(line, dict) and "started" in line)
    ]
    if run_dir.file(CALLS_FILE).exists():
        parts.calls.append(run_dir.file(CALLS_FILE).read_bytes())


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


def _write(out: Path, order: list[tuple[str, str]], parts: _Parts, shards: _Shards) -> None:
    """Write the merged run into ``out``: the results in ``order``, the metrics, the
    checkpoint, the judge's record, the calls, the manifest and ``merge.json``."""
    records = [parts.held[key] for key in order]
    results = [EvalResult.from_dict(record) for record in records]
    reference = shards.manifests[min(shards.manifests)]
    judge = _merged_judge(reference, records)
    metrics = compute_metrics(results, judge)
    with RunDir(out) as run_dir:
        run_dir.claim()
        checksum = run_dir.write_results(records)
        run_dir.write_json("metrics.json", metrics)
        checkpoint = [dict(parts.header or {}), *(parts.lines[key] for key in order)]

        write_jsonl(run_dir.checkpoint, checkpoint)
        if parts.caches:
            run_dir.write_json(JUDGE_CACHE, parts.caches)
        if parts.verdicts:
            write_jsonl(run_dir.file(VERDICTS), parts.verdicts)
        if parts.calls:
            # Without a line a shard's process may have died writing (it counts no call).
            joined = b"".join(part[: part.rfind(b"\n") + 1] for part in parts.calls)
            write_text_atomic(run_dir.file(CALLS_FILE), joined.decode("utf-8"))
        every = [shards.manifests[i] for i in sorted(shards.manifests)]
        merged = _MergedRun(out, results, judge, metrics, checksum, len(shards.covers))
        run_dir.write_manifest(_merged_manifest(reference, every, merged))
        run_dir.write_json("merge.json", {"merged_from": _merged_from(shards)})


def _merged_judge(reference: Manifest, records: Sequence[Mapping[str, Any]]) -> JudgeScores | None:
    """The judge's scores as the shards' results hold them, described as the first shard's
    manifest describes its judge; ``None`` when the run was not judged."""
    if reference.judge is None:
        return None
    described = reference.judge
    errors = {i: r["judge_error"] for i, r in enumerate(records) if r.get("judge_error")}
    return JudgeScores(
        [math.nan if r.get("judge") is None else float(r["judge"]) for r in records],
        provider=described["provider"],
        model=described["model"],
        temperature=described["temperature"],
        prompt_hashes=described["prompt_hashes"],
        errors=errors,
        weights=described.get("weights"),
    )


@dataclass(frozen=True)
class _MergedRun:
    """What the merge made, for its manifest: the run directory ``out``, the ``results``,
    the ``judge``'s scores, the ``metrics``, the ``checksum`` of ``results.jsonl`` and the
    number of ``samples``."""

    out: Path
    results: list[EvalResult]
    judge: JudgeScores | None
    metrics: dict[str, Any]
    checksum: str
    samples: int


def _merged_manifest(
    reference: Manifest, every: Sequence[Manifest], merged: _MergedRun
) -> Manifest:
    """The merged run's manifest: the first shard's (``reference``), with the fields of
    :data:`PER_RUN_FIELDS` combined over ``every`` shard and the content's own counts."""
    results, judge = merged.results, merged.judge
    tokens = dict(reference.tokens)
    tokens["answer_input"] = sum(r.input_tokens for r in results)
    tokens["answer_output"] = sum(r.output_tokens for r in results)
    tokens["client_usage_this_invocation"] = None
    return dataclasses.replace(
        reference,
        started_at=min(m.started_at for m in every),
        finished_at=max(m.finished_at for m in every),
        wall_time_s=round(sum(m.wall_time_s for m in every), 3),
        resumed=sum(m.resumed for m in every),
        arguments={**reference.arguments, "out": str(merged.out), "shard": None},
        shard=None,
        dataset=dataclasses.replace(
            reference.dataset, samples=merged.samples, questions=len(results)
        ),
        counts=merged.metrics["counts"],
        # The judge's server and whether it was apart are the shards' own record.
        judge=reference.judge if judge is None else {**(reference.judge or {}), **judge.describe()},
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
        results_sha256=merged.checksum,
        costs=_summed_costs(every),
        history=(),
        format=MANIFEST_FORMAT,
    )


def _merged_from(shards: _Shards) -> list[dict[str, Any]]:
    """``merge.json``'s ``merged_from``: each shard's own per-invocation values."""
    manifests = shards.manifests
    return [
        {
            "path": str(shards.paths[i]),
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

"""Judging a run into its verdict record: ``himga eval``'s own judge, and ``himga judge``
adding another to a finished run without re-answering it."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from himga._errors import HimgaError
from himga.benchmarks._judge_prompts import OFFICIAL, get_judge_prompt
from himga.benchmarks._registry import find_benchmark
from himga.eval.judge import JudgeScores, batch_judge, judge_id
from himga.llm import HasUsage, LLMClient, TokenUsage
from himga.llm._client import public_url
from himga.runs._manifest import Manifest
from himga.runs._rundir import RunDir
from himga.runs._verdicts import VERDICTS, VerdictRecord, predictions_sha256, read_verdicts
from himga.scoring._result import EvalResult

__all__ = [
    "JudgeRunError",
    "JudgedRun",
    "carried_judges",
    "judge_entry",
    "judge_into_record",
    "judge_run",
]


class JudgeRunError(HimgaError, ValueError):
    """The run cannot take this judge (no manifest yet, or answers changed since the
    judge judged them); the message says why and what to do."""


def _silent(note: str) -> None:
    """The default ``notify``: tell nothing."""


def judge_into_record(
    run_dir: RunDir,
    results: Sequence[EvalResult],
    llm: LLMClient,
    *,
    prompt: str = OFFICIAL,
    known: Mapping[str, Any] | None = None,
    notify: Callable[[str], None] = _silent,
    show_progress: bool = True,
    max_concurrency: int | None = None,
) -> tuple[JudgeScores, int]:
    """Judge ``results`` with ``llm`` and the judge prompt ``prompt``, every verdict
    appended to the run's ``verdicts.jsonl`` under the judge's id as it is parsed, the
    scores when the judging ends; only the verdicts the record (or ``known``: an older
    run's cache) does not hold are asked. The scores, and how many verdicts were asked."""
    name = judge_id(llm.provider, llm.model, prompt)
    recorded = read_verdicts(run_dir.file(VERDICTS), notify)
    before = {**(known or {}), **recorded.verdicts.get(name, {})}
    with VerdictRecord(run_dir.file(VERDICTS), name, before) as record:
        record.start(
            {"provider": llm.provider, "model": llm.model, "prompt": prompt},
            predictions_sha256(results),
        )
        scores = batch_judge(
            results,
            llm=llm,
            cache=record,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
            prompt=prompt,
        )
        record.record_scores(results, scores)
        asked = len(record) - len(before)
    return scores, asked


def judge_entry(
    scores: JudgeScores,
    *,
    prompt: str,
    base_url: str | None,
    results: Sequence[EvalResult],
    source: str,
) -> dict[str, Any]:
    """The manifest's ``judges`` entry of a judging (:meth:`Manifest.judge_entries`)."""
    return {
        "id": judge_id(scores.provider, scores.model, prompt),
        **scores.describe(),
        "prompt": prompt,
        "base_url": None if base_url is None else public_url(base_url),
        "predictions_sha256": predictions_sha256(results),
        "scores": source,
    }


@dataclass(frozen=True)
class JudgedRun:
    """A judge added to a run: its ``id``, its ``scores`` (aligned with the run's results),
    how many verdicts were ``asked`` (0 when the record held them all) and the
    ``manifest`` written."""

    id: str
    scores: JudgeScores
    asked: int
    manifest: Manifest


def _costs(
    llm: LLMClient, before: TokenUsage | None, seconds: float, earlier: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The judge entry's ``costs``: this invocation's calls, tokens and seconds (from the
    client's :class:`~himga.llm.HasUsage` counts, ``before`` taken as it began) added to
    ``earlier`` (the entry's costs from the invocations before); ``None`` for a client
    that counts nothing."""
    if before is None or not isinstance(llm, HasUsage):
        return None
    after = llm.usage
    now = {
        "calls": after.calls - before.calls,
        "failed_calls": after.failed_calls - before.failed_calls,
        "input_tokens": after.input_tokens - before.input_tokens,
        "output_tokens": after.output_tokens - before.output_tokens,
        "unmetered_calls": after.unmetered_calls - before.unmetered_calls,
        "seconds": round(seconds, 3),
    }
    if earlier:
        now = {key: value + earlier.get(key, 0) for key, value in now.items()}
    return now


def _check_self_test(self_test: Mapping[str, Any], name: str, dataset: str) -> None:
    """Refuse a self-test result of another judge or dataset than this judging's."""
    judge = self_test.get("judge") or {}
    tested = judge_id(str(judge.get("provider")), str(judge.get("model")), str(judge.get("prompt")))
    if tested != name or self_test.get("dataset") != dataset:
        raise JudgeRunError(
            f"the self-test given is of judge {tested} on {self_test.get('dataset')!r}, "
            f"not of {name} on {dataset!r}"
        )


def judge_run(
    path: str | os.PathLike[str],
    llm: LLMClient,
    *,
    prompt: str = OFFICIAL,
    base_url: str | None = None,
    self_test: Mapping[str, Any] | None = None,
    notify: Callable[[str], None] = _silent,
    show_progress: bool = True,
    max_concurrency: int | None = None,
) -> JudgedRun:
    """Add the judge ``llm`` with the judge prompt ``prompt`` to the finished run at
    ``path``, without re-answering: its verdicts go to ``verdicts.jsonl`` (only those
    not already there are asked: a rerun asks none, a killed one resumes), its entry to
    the manifest's ``judges`` (written atomically; ``base_url``: where the judge was
    served, as recorded), with its ``costs``: the calls, tokens and seconds of every
    invocation that finished (one killed mid-way keeps its verdicts but its calls go
    uncounted), and ``self_test``, the judge's self-test result
    (:meth:`~himga.eval.JudgeTestResult.to_dict`) when one is given, which must be of
    this judge on the run's dataset.

    Raises :class:`JudgeRunError` for a run without a manifest, and for answers changed
    since this judge judged them (the run was resumed and re-answered);
    :class:`~himga.benchmarks.JudgePromptError` when the run's benchmark has no prompt
    ``prompt``;
    :class:`~himga.runs.RunDirError` when another process writes the run,
    :class:`~himga.runs.RunReadError` when it cannot be read.
    """
    with RunDir(path) as run_dir:
        if not run_dir.file("manifest.json").exists():
            raise JudgeRunError(
                f"{run_dir.path} has no manifest.json (under way, or stopped): finish it with "
                f"himga eval --out {run_dir.path} --resume, then add the judge"
            )
        run_dir.claim(resume=True)
        run = run_dir.read()
        benchmark = find_benchmark(run.dataset_name)
        if benchmark is None:
            raise JudgeRunError(f"{run_dir.path}: dataset {run.dataset_name!r} is not known")
        get_judge_prompt(benchmark.name, prompt)  # an unknown prompt: refused before a call
        name = judge_id(llm.provider, llm.model, prompt)
        fingerprint = predictions_sha256(run.results)
        earlier = read_verdicts(run_dir.file(VERDICTS), notify).started.get(name)
        entries = run.manifest.judge_entries()
        judged = [e.get("predictions_sha256") for e in entries if e.get("id") == name]
        if earlier is not None:
            judged.append(earlier.get("predictions_sha256"))
        if any(sha not in (None, fingerprint) for sha in judged):
            raise JudgeRunError(
                f"{run_dir.path}: its answers changed since judge {name} judged them (the run "
                "was resumed and re-answered): its verdicts would mix two sets of answers; "
                "judge a copy of the run made before, or a new run"
            )
        if self_test is not None:
            _check_self_test(self_test, name, run.dataset_name)
        usage = llm.usage if isinstance(llm, HasUsage) else None
        started = time.perf_counter()
        scores, asked = judge_into_record(
            run_dir,
            run.results,
            llm,
            prompt=prompt,
            notify=notify,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
        )
        entry = judge_entry(
            scores, prompt=prompt, base_url=base_url, results=run.results, source="verdicts"
        )
        previous = next((e for e in entries if e.get("id") == name), {})
        costs = _costs(llm, usage, time.perf_counter() - started, previous.get("costs"))
        if costs is not None:
            entry["costs"] = costs
        tested = self_test if self_test is not None else previous.get("self_test")
        if tested is not None:
            entry["self_test"] = dict(tested)
        kept = tuple(e for e in entries if e.get("id") != name)
        manifest = dataclasses.replace(run.manifest, judges=(*kept, entry))
        run_dir.write_manifest(manifest)
    return JudgedRun(name, scores, asked, manifest)


def carried_judges(run_dir: RunDir, own: str) -> tuple[Mapping[str, Any], ...]:
    """The judges ``himga judge`` added to the run in ``run_dir`` before (not ``own``,
    the eval's judge), as its manifest lists them, for the manifest a resume writes;
    none when it has no readable manifest."""
    path: Path = run_dir.file("manifest.json")
    if not path.exists():
        return ()
    try:
        entries = run_dir.read_manifest().judge_entries()
    except HimgaError:
        return ()
    return tuple(e for e in entries if e.get("id") != own and e.get("scores") == "verdicts")

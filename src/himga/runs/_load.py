"""Reading any run directory, finished or not: one loader for ``himga runs``, ``view``, ``report``.

A finished run is read as :meth:`RunDir.read` reads it (a :class:`Run`, checked
against its manifest). A run with a checkpoint but no manifest yet -- under way,
or killed before it finished -- is a :class:`PartialRun`: what its checkpoint
holds (read without writing, a torn last line ignored), with metrics computed
from those results and the total it planned from ``plan.json``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from himga.eval import compute_metrics
from himga.eval._checkpoint import CheckpointError, read_checkpoint
from himga.eval.judge import recorded_scores
from himga.runs._files import leading_entries
from himga.runs._journal import JUDGE_JOURNAL, read_journal
from himga.runs._rundir import (
    JUDGE_CACHE,
    MARKER,
    PLAN,
    FinishedRunBase,
    Run,
    RunDir,
    RunReadError,
)
from himga.runs._verdicts import VERDICTS
from himga.runs._verdicts import read_verdicts as read_record
from himga.scoring._result import EvalResult

__all__ = [
    "PartialRun",
    "RunHead",
    "RunStatus",
    "find_runs",
    "load_head",
    "load_run",
    "read_verdicts",
    "run_status",
]

#: ``complete``: finished, every question answered; ``failed``: finished, but some
#: questions failed (a memory, LLM or judge error: ``himga eval`` exited 3);
#: ``partial``: no manifest yet, under way or stopped before the end.
RunStatus = Literal["complete", "partial", "failed"]


@dataclass(frozen=True)
class PartialRun:
    """A run read from its checkpoint alone: ``identity`` is the checkpoint's header (the
    run identity: memory, arguments, dataset, LLM, judge), ``results`` the questions
    finished so far, ``metrics`` theirs (:func:`~himga.eval.compute_metrics`), ``judge``
    their scores from the verdicts a run stopped while judging kept (:func:`read_verdicts`;
    NaN for each question without one: verdicts come after every answer), ``judge_errors``
    those of a judge that could not score its verdicts, ``planned`` the questions the run
    set out to answer and ``started_at`` when (``None`` for a run of a himga that did
    not record them)."""

    path: Path
    identity: Mapping[str, Any]
    results: list[EvalResult]
    judge: list[float]
    metrics: dict[str, Any]
    planned: int | None
    started_at: str | None
    judge_errors: tuple[str | None, ...] = ()

    @property
    def label(self) -> str:
        """The memory spec with its arguments, e.g. ``bm25 k=20``, as :attr:`Run.label`."""
        arguments = self.identity.get("memory_arguments") or {}
        given = " ".join(f"{k}={v}" for k, v in arguments.items())
        return " ".join(p for p in (str(self.identity.get("memory_spec", "?")), given) if p)

    @property
    def dataset_name(self) -> str:
        """The dataset (benchmark) the run evaluates, as :attr:`Run.dataset_name`."""
        return str(self.identity.get("dataset") or "?")


@dataclass(frozen=True)
class RunHead(FinishedRunBase):
    """A finished run's manifest and metrics, its results not read (:func:`load_head`):
    what a leaderboard needs, for the cost of two small files."""


def run_status(run: Run | RunHead | PartialRun) -> RunStatus:
    """``partial`` for a :class:`PartialRun`; ``failed`` for a finished run some of whose
    questions failed; else ``complete``."""
    if isinstance(run, PartialRun):
        return "partial"
    counts = run.metrics.get("counts", {})
    failed = counts.get("errors") or counts.get("memory_errors") or counts.get("judge_errors")
    return "failed" if failed else "complete"


def load_run(path: str | os.PathLike[str]) -> Run | PartialRun:
    """The run in ``path``: a :class:`Run` once it has a manifest, else a :class:`PartialRun`
    from its checkpoint; :class:`RunReadError` (one line, naming the file) when neither
    can be read."""
    run_dir = RunDir(path)
    if run_dir.file("manifest.json").exists():
        return run_dir.read()
    return _partial(run_dir)


def load_head(path: str | os.PathLike[str]) -> RunHead | PartialRun:
    """What :func:`load_run` reads, but of a finished run only its manifest and metrics
    (a :class:`RunHead`; :func:`load_run` reads and checks its results when they are
    needed); :class:`RunReadError` as there."""
    run_dir = RunDir(path)
    if run_dir.file("manifest.json").exists():
        return RunHead(run_dir.path, run_dir.read_manifest(), run_dir.read_metrics())
    return _partial(run_dir)


def _partial(run_dir: RunDir) -> PartialRun:
    """The run in ``run_dir``, which has no manifest, from its checkpoint."""
    checkpoint = run_dir.checkpoint
    try:
        recorded = read_checkpoint(checkpoint)
    except FileNotFoundError:
        raise RunReadError(
            f"{run_dir.path}: no manifest.json nor checkpoint.jsonl (is it a himga eval run?)"
        ) from None
    except OSError as exc:
        raise RunReadError(f"{checkpoint}: cannot read: {exc.strerror}") from None
    except CheckpointError as exc:
        raise RunReadError(str(exc)) from None
    # A run that has only just started has not written its header yet: partial, nothing done.
    identity, done = recorded if recorded is not None else ({}, {})
    results = list(done.values())
    judge: list[float] = [math.nan] * len(results)
    errors: dict[int, str] = {}
    described = identity.get("judge")
    if isinstance(described, dict) and results:
        verdicts = read_verdicts(run_dir)
        if verdicts:
            judge, errors = recorded_scores(
                results,
                verdicts,
                provider=str(described.get("provider", "")),
                model=str(described.get("model", "")),
            )
    # Counted answered but not judged: the questions the judging had not reached.
    judged = any(not math.isnan(score) for score in judge)
    plan = _plan(run_dir)
    planned = plan.get("questions")
    started = plan.get("started_at")
    return PartialRun(
        path=run_dir.path,
        identity=identity,
        results=results,
        judge=judge,
        metrics=compute_metrics(results, judge if judged else None),
        planned=planned if type(planned) is int else None,
        started_at=started if isinstance(started, str) else None,
        judge_errors=tuple(errors.get(i) for i in range(len(results))) if errors else (),
    )


def read_verdicts(run_dir: RunDir) -> dict[str, Any]:
    """The judges' verdicts ``run_dir`` holds, by request key (what
    :func:`~himga.eval.judge.batch_judge` keeps): every judge's in ``verdicts.jsonl``
    (a request key names its judge's provider, model and prompt text, so the judges'
    keys never collide), and, in a run of an older himga, ``judge_cache.json`` and the
    whole lines of the journal a run stopped while judging left beside it; of a damaged
    file, the verdicts before the damage. Read-only. The one place runs are read for
    their verdicts, so that where ``himga eval`` keeps them is known here alone."""

    def ignore(message: str) -> None:
        pass  # a reader shows what is there; himga eval --resume says what it re-asks

    recorded = read_record(run_dir.file(VERDICTS), ignore)
    found: dict[str, Any] = {
        key: verdict
        for per_judge in recorded.verdicts.values()
        for key, verdict in per_judge.items()
    }
    journal = read_journal(run_dir.file(JUDGE_JOURNAL), ignore)
    try:
        text = run_dir.file(JUDGE_CACHE).read_text("utf-8", errors="replace")
    except OSError:  # none (a new run, or judging had not started), or unreadable
        return {**journal, **found}
    return {**leading_entries(text), **journal, **found}


def _plan(run_dir: RunDir) -> dict[str, Any]:
    """``plan.json``, or ``{}`` when a run has none (written by an older himga)."""
    if not run_dir.file(PLAN).exists():
        return {}
    plan = run_dir.read_json(PLAN)
    return plan if isinstance(plan, dict) else {}


def _is_run(path: Path) -> bool:
    return any((path / name).exists() for name in ("manifest.json", "checkpoint.jsonl", MARKER))


def find_runs(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` when it is a run directory, else the run directories directly in it, sorted
    by name; :class:`RunReadError` when it is neither a directory nor holds a run."""
    root = Path(path)
    if not root.is_dir():
        raise RunReadError(f"{root}: not a directory")
    if _is_run(root):
        return [root]
    found = sorted(child for child in root.iterdir() if child.is_dir() and _is_run(child))
    if not found:
        raise RunReadError(f"{root}: no himga eval run in it (no manifest.json, checkpoint.jsonl)")
    return found

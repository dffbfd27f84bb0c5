"""Run directories as typed objects: write a run (``himga eval``), read, merge, compare, report.

A run directory holds one evaluation: ``checkpoint.jsonl``, ``results.jsonl``,
``metrics.json`` and ``manifest.json`` (:class:`Manifest`), marked as himga's and
locked while written (:class:`RunDir`). :func:`evaluate_run` makes one from an
:class:`EvalRequest`; :meth:`RunDir.read` reads one back, checked against its
manifest; :func:`load_run` reads any run, a :class:`PartialRun` from its checkpoint while it has
no manifest (under way, or killed); :func:`merge_runs`, :func:`compare_runs`,
:func:`render_report` and :func:`summarize_run` are ``himga merge``, ``compare``,
``report`` and ``runs`` without the command line; :func:`arm_of` names a run's arm,
:func:`cost_per_correct` what it spent per correct answer, :func:`load_published` the
published claims a report shows beside it.
"""

from himga.runs._arms import ARM_TITLES, ArmKind, arm_of, arm_split, format_arm_split
from himga.runs._compare import (
    DEFAULT_METRICS,
    METRIC_TITLES,
    CompareError,
    Comparison,
    PairedDifference,
    arm_comparison,
    compare_runs,
    format_comparison,
    plot_comparison,
)
from himga.runs._evaluate import (
    ArmError,
    EvalRequest,
    PreflightFailedError,
    RunOutcome,
    default_run_directory,
    evaluate_run,
)
from himga.runs._judge import JudgedRun, JudgeRunError, judge_run
from himga.runs._judges import format_judges
from himga.runs._leaderboard import Leaderboard, LeaderboardRow, format_leaderboard, leaderboard
from himga.runs._load import (
    PartialRun,
    RunHead,
    RunStatus,
    find_runs,
    load_head,
    load_run,
    read_verdicts,
    run_status,
)
from himga.runs._manifest import (
    MANIFEST_FORMAT,
    CostsInfo,
    DatasetInfo,
    Manifest,
    ManifestError,
    MemoryInfo,
    ShardInfo,
)
from himga.runs._merge import PER_RUN_FIELDS, MergeError, merge_runs
from himga.runs._per_correct import cost_per_correct, costs_per_correct, format_cost_per_correct
from himga.runs._preflight import PreflightReport, preflight
from himga.runs._published import (
    PublishedClaim,
    PublishedError,
    format_published,
    load_published,
    published_for,
)
from himga.runs._report import plot_report, render_report
from himga.runs._rundir import (
    Run,
    RunDir,
    RunDirError,
    RunLockedError,
    RunReadError,
)
from himga.runs._summary import HEADLINE_METRICS, RunSummary, format_runs, summarize_run

__all__ = [
    "ARM_TITLES",
    "DEFAULT_METRICS",
    "HEADLINE_METRICS",
    "MANIFEST_FORMAT",
    "METRIC_TITLES",
    "PER_RUN_FIELDS",
    "ArmError",
    "ArmKind",
    "CompareError",
    "Comparison",
    "CostsInfo",
    "DatasetInfo",
    "EvalRequest",
    "JudgeRunError",
    "JudgedRun",
    "Leaderboard",
    "LeaderboardRow",
    "Manifest",
    "ManifestError",
    "MemoryInfo",
    "MergeError",
    "PairedDifference",
    "PartialRun",
    "PreflightFailedError",
    "PreflightReport",
    "PublishedClaim",
    "PublishedError",
    "Run",
    "RunDir",
    "RunDirError",
    "RunHead",
    "RunLockedError",
    "RunOutcome",
    "RunReadError",
    "RunStatus",
    "RunSummary",
    "ShardInfo",
    "arm_comparison",
    "arm_of",
    "arm_split",
    "compare_runs",
    "cost_per_correct",
    "costs_per_correct",
    "default_run_directory",
    "evaluate_run",
    "find_runs",
    "format_arm_split",
    "format_comparison",
    "format_cost_per_correct",
    "format_judges",
    "format_leaderboard",
    "format_published",
    "format_runs",
    "judge_run",
    "leaderboard",
    "load_head",
    "load_published",
    "load_run",
    "merge_runs",
    "plot_comparison",
    "plot_report",
    "preflight",
    "published_for",
    "read_verdicts",
    "render_report",
    "run_status",
    "summarize_run",
]

"""Run directories as typed objects: write a run (``himga eval``), read, merge, compare, report.

A run directory holds one evaluation: ``checkpoint.jsonl``, ``results.jsonl``,
``metrics.json`` and ``manifest.json`` (:class:`Manifest`), marked as himga's and
locked while written (:class:`RunDir`). :func:`evaluate_run` makes one from an
:class:`EvalRequest`; :meth:`RunDir.read` reads one back, checked against its
manifest; :func:`merge_runs`, :func:`compare_runs` and :func:`render_report` are
``himga merge``, ``compare`` and ``report`` without the command line.
"""

from himga.runs._compare import (
    DEFAULT_METRICS,
    METRIC_TITLES,
    CompareError,
    compare_runs,
    format_comparison,
    format_p_value,
    nan_if_none,
    plot_comparison,
)
from himga.runs._evaluate import (
    EvalRequest,
    PreflightFailedError,
    RunOutcome,
    default_run_directory,
    evaluate_run,
)
from himga.runs._files import write_json, write_jsonl, write_text_atomic
from himga.runs._journal import JUDGE_JOURNAL
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
from himga.runs._preflight import PREFLIGHT_EXAMPLES, PreflightReport, preflight
from himga.runs._report import plot_report, render_report
from himga.runs._rundir import (
    JUDGE_CACHE,
    LOCK,
    MARKER,
    RUN_FILES,
    Run,
    RunDir,
    RunDirError,
    RunLockedError,
    RunReadError,
    guard_output,
)

__all__ = [
    "DEFAULT_METRICS",
    "JUDGE_CACHE",
    "JUDGE_JOURNAL",
    "LOCK",
    "MANIFEST_FORMAT",
    "MARKER",
    "METRIC_TITLES",
    "PER_RUN_FIELDS",
    "PREFLIGHT_EXAMPLES",
    "RUN_FILES",
    "CompareError",
    "CostsInfo",
    "DatasetInfo",
    "EvalRequest",
    "Manifest",
    "ManifestError",
    "MemoryInfo",
    "MergeError",
    "PreflightFailedError",
    "PreflightReport",
    "Run",
    "RunDir",
    "RunDirError",
    "RunLockedError",
    "RunOutcome",
    "RunReadError",
    "ShardInfo",
    "compare_runs",
    "default_run_directory",
    "evaluate_run",
    "format_comparison",
    "format_p_value",
    "guard_output",
    "merge_runs",
    "nan_if_none",
    "plot_comparison",
    "plot_report",
    "preflight",
    "render_report",
    "write_json",
    "write_jsonl",
    "write_text_atomic",
]

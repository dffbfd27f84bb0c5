"""The evaluation loop, its results and the metrics computed from them.

Every metric is defined once in the metric registry (:class:`Metric`,
:func:`get_metric`, :func:`available_metrics`); scorers live in the public modules
:mod:`himga.scoring.metrics` (token F1, BLEU-1, exact match) and
:mod:`himga.eval.judge` (LLM-as-judge, through each benchmark's judge).

:class:`EvalResult`, :class:`MemoryCallError`, :class:`Metric`, :class:`MetricNeed`,
:class:`RunMetric` and :data:`SEARCH_K` are :mod:`himga.scoring`'s, re-exported here (the
layer below :mod:`himga.benchmarks`, which uses them too). ``himga.eval.metrics`` still
imports for one release and warns that it moved to :mod:`himga.scoring.metrics`.
"""

from typing import Any

from himga._redact import redact
from himga.eval._aggregate import (
    JUDGE_INTERVAL,
    compute_measurements,
    compute_metrics,
    judge_interval,
    question_scores,
    result_groups,
)
from himga.eval._checkpoint import CheckpointError, CheckpointMismatchError
from himga.eval._identity import SEARCH_K, RunIdentity, run_identity
from himga.eval._ledger import DuplicateQuestionError
from himga.eval._metric_registry import (
    UnknownMetricError,
    available_metrics,
    context_containment,
    get_metric,
    metrics_of,
    register_metric,
)
from himga.eval._options import EvalOptions, Executor, PhaseMeter
from himga.eval._oracle import ARMS, Arm, oracle_context
from himga.eval._ranking import (
    RANK_KS,
    all_evidence_recall_at_k,
    evidence_recall_at_k,
    ndcg_at_k,
)
from himga.eval._ray import RayClusterError, RayExecutor, WorkerStartError
from himga.eval._run import arun_eval, run_eval
from himga.eval._shard import Shard, ShardSpecError
from himga.eval._spec import AgentSpec, AgentSpecError
from himga.eval._table import INTERVAL_TITLE, format_cell, format_table, headline_title, table_rows
from himga.eval.judge import JudgeScores, abatch_judge, batch_judge
from himga.scoring._metric import Metric, MetricNeed, RunMetric
from himga.scoring._result import EvalResult, MemoryCallError

__all__ = [
    "ARMS",
    "INTERVAL_TITLE",
    "JUDGE_INTERVAL",
    "RANK_KS",
    "SEARCH_K",
    "AgentSpec",
    "AgentSpecError",
    "Arm",
    "CheckpointError",
    "CheckpointMismatchError",
    "DuplicateQuestionError",
    "EvalOptions",
    "EvalResult",
    "Executor",
    "JudgeScores",
    "MemoryCallError",
    "Metric",
    "MetricNeed",
    "PhaseMeter",
    "RayClusterError",
    "RayExecutor",
    "RunIdentity",
    "RunMetric",
    "Shard",
    "ShardSpecError",
    "UnknownMetricError",
    "WorkerStartError",
    "abatch_judge",
    "all_evidence_recall_at_k",
    "arun_eval",
    "available_metrics",
    "batch_judge",
    "compute_measurements",
    "compute_metrics",
    "context_containment",
    "evidence_recall_at_k",
    "format_cell",
    "format_table",
    "get_metric",
    "headline_title",
    "judge_interval",
    "metrics_of",
    "ndcg_at_k",
    "oracle_context",
    "question_scores",
    "redact",
    "register_metric",
    "result_groups",
    "run_eval",
    "run_identity",
    "table_rows",
]


def __getattr__(name: str) -> Any:
    # ``himga.eval.metrics`` was an attribute once ``himga.eval`` was imported; the moved
    # module is imported (and warns) only when it is asked for.
    if name == "metrics":
        import importlib

        return importlib.import_module("himga.eval.metrics")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

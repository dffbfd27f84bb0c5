"""The evaluation loop, its results and the metrics computed from them.

Scorers live in the public modules :mod:`himga.eval.metrics` (LoCoMo F1,
BLEU-1, exact match) and :mod:`himga.eval.judge` (LLM-as-judge).
"""

from himga.eval._aggregate import compute_metrics, context_containment, question_scores
from himga.eval._checkpoint import CheckpointError, CheckpointMismatchError
from himga.eval._identity import SEARCH_K, RunIdentity, run_identity
from himga.eval._ledger import DuplicateQuestionError
from himga.eval._longmemeval_retrieval import (
    LONGMEMEVAL_KS,
    longmemeval_retrieval_metrics,
    session_retrieval,
    session_sizes,
    turn_retrieval,
)
from himga.eval._options import EvalOptions, Executor
from himga.eval._ranking import (
    RANK_KS,
    all_evidence_recall_at_k,
    evidence_recall_at_k,
    ndcg_at_k,
)
from himga.eval._ray import RayExecutor, WorkerStartError
from himga.eval._redact import redact
from himga.eval._result import EvalResult, MemoryCallError
from himga.eval._run import arun_eval, run_eval
from himga.eval._shard import Shard, ShardSpecError
from himga.eval._spec import AgentSpec, AgentSpecError
from himga.eval.judge import JudgeScores, abatch_judge, batch_judge

__all__ = [
    "LONGMEMEVAL_KS",
    "RANK_KS",
    "SEARCH_K",
    "AgentSpec",
    "AgentSpecError",
    "CheckpointError",
    "CheckpointMismatchError",
    "DuplicateQuestionError",
    "EvalOptions",
    "EvalResult",
    "Executor",
    "JudgeScores",
    "MemoryCallError",
    "RayExecutor",
    "RunIdentity",
    "Shard",
    "ShardSpecError",
    "WorkerStartError",
    "abatch_judge",
    "all_evidence_recall_at_k",
    "arun_eval",
    "batch_judge",
    "compute_metrics",
    "context_containment",
    "evidence_recall_at_k",
    "longmemeval_retrieval_metrics",
    "ndcg_at_k",
    "question_scores",
    "redact",
    "run_eval",
    "run_identity",
    "session_retrieval",
    "session_sizes",
    "turn_retrieval",
]

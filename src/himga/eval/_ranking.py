"""Rank metrics of a memory's search results against a question's evidence turns.

``ranked`` is the turn ids of :meth:`~himga.memory.SearchableMemory.search`,
best first (``None`` ids never match); ``evidence`` is the question's evidence
turn ids. Only the first ``k`` ranked ids count.

Evidence recall@k follows the LoCoMo RAG scorer (``eval_question_answering``
in ``task_eval/evaluation.py`` of snap-research/locomo): the number of evidence
ids found among the retrieved ids divided by the number of evidence ids, each
listed evidence id counted once per listing. As there, a question without
evidence scores 1.0 -- on every metric here -- since nothing is missed; the
evaluation's aggregates skip such questions when they report "questions with
evidence".
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

__all__ = ["RANK_KS", "all_evidence_recall_at_k", "evidence_recall_at_k", "ndcg_at_k"]

RANK_KS: tuple[int, ...] = (1, 5, 10, 25, 50)
"""The cut-offs reported by the evaluation."""


def _top(ranked: Sequence[str | None], k: int) -> set[str | None]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return set(ranked[:k])


def evidence_recall_at_k(ranked: Sequence[str | None], evidence: Collection[str], k: int) -> float:
    """The fraction of ``evidence`` found in the top ``k`` of ``ranked`` (1.0 without evidence)."""
    top = _top(ranked, k)
    if not evidence:
        return 1.0
    return sum(turn in top for turn in evidence) / len(evidence)


def all_evidence_recall_at_k(
    ranked: Sequence[str | None], evidence: Collection[str], k: int
) -> float:
    """1.0 when every evidence turn is in the top ``k`` of ``ranked``, else 0.0."""
    top = _top(ranked, k)
    return 1.0 if all(turn in top for turn in evidence) else 0.0


def ndcg_at_k(ranked: Sequence[str | None], evidence: Collection[str], k: int) -> float:
    """Binary-relevance nDCG@k of ``ranked`` against ``evidence``.

    A distinct evidence turn at rank ``r`` (1-based) gains ``1/log2(r+1)``; a
    repeated id gains only at its first rank. The ideal DCG puts
    ``min(k, number of distinct evidence turns)`` relevant turns first.
    1.0 without evidence.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    relevant = set(evidence)
    if not relevant:
        return 1.0
    seen: set[str] = set()
    dcg = 0.0
    for rank, turn in enumerate(ranked[:k], start=1):
        if turn is not None and turn in relevant and turn not in seen:
            seen.add(turn)
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal

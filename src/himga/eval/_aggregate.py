"""Aggregation of evaluation results into the numbers a paper table reports."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import Any

from himga.data.schema import Category
from himga.eval._longmemeval_retrieval import longmemeval_retrieval_metrics
from himga.eval._ranking import (
    RANK_KS,
    all_evidence_recall_at_k,
    evidence_recall_at_k,
    ndcg_at_k,
)
from himga.eval._result import EvalResult
from himga.eval.metrics import bleu1, exact_match, locomo_f1, token_f1

__all__ = ["compute_metrics", "context_containment", "question_scores"]


def _squash(text: str) -> str:
    return " ".join(text.split())


def context_containment(result: EvalResult) -> float | None:
    """The fraction of the result's evidence turns whose text appears in its context.

    Texts are compared with whitespace collapsed; evidence turns missing from the
    sample are left out. ``None`` when no evidence turn has a text.
    """
    texts = [_squash(text) for text in result.evidence_texts if text is not None]
    if not texts:
        return None
    context = _squash(result.context)
    return sum(text in context for text in texts) / len(texts)


def _f1(result: EvalResult, prediction: str) -> float | None:
    if result.category.locomo_code is not None:
        return locomo_f1(prediction, result.answer, result.category)
    if result.adversarial:
        return None  # the gold explains why there is no answer; it is not one
    return token_f1(prediction, result.answer)


def _bleu1(result: EvalResult, prediction: str) -> float | None:
    # An unanswerable question's gold is a distractor (LoCoMo) or an
    # explanation (LongMemEval): overlap with it is no measure of a right answer.
    return None if result.adversarial else bleu1(prediction, result.answer)


def _exact_match(result: EvalResult, prediction: str) -> float | None:
    return None if result.adversarial else exact_match(prediction, result.answer)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def question_scores(result: EvalResult, judge: float | None = None) -> dict[str, float | None]:
    """Every metric of :func:`compute_metrics` for one question, ``None`` where it does
    not apply; a block's value is the mean of its questions' non-``None`` values.

    Answer metrics (``f1``, ``bleu1``, ``exact_match``, and ``judge`` when given)
    need a prediction and no error; context metrics a text for an evidence turn;
    rank metrics a ranking and evidence. A result with a ``memory_error`` has no
    score at all.
    """
    scores: dict[str, float | None] = dict.fromkeys(_METRICS)
    if result.memory_error is not None:
        return scores
    if result.prediction is not None and result.error is None:
        scores["f1"] = _f1(result, result.prediction)
        scores["bleu1"] = _bleu1(result, result.prediction)
        scores["exact_match"] = _exact_match(result, result.prediction)
        scores["judge"] = None if judge is None or math.isnan(judge) else float(judge)
    containment = context_containment(result)
    if containment is not None:
        scores["context_recall"] = containment
        scores["context_recall_any"] = float(containment > 0)
        scores["context_recall_all"] = float(containment == 1)
    if result.ranked_turn_ids is not None and result.evidence_turns:
        for k in RANK_KS:
            ranked, evidence = result.ranked_turn_ids, result.evidence_turns
            scores[f"recall@{k}"] = evidence_recall_at_k(ranked, evidence, k)
            scores[f"all_recall@{k}"] = all_evidence_recall_at_k(ranked, evidence, k)
            scores[f"ndcg@{k}"] = ndcg_at_k(ranked, evidence, k)
    return scores


_METRICS = (
    "f1",
    "bleu1",
    "exact_match",
    "judge",
    "context_recall",
    "context_recall_any",
    "context_recall_all",
    *(f"{name}@{k}" for k in RANK_KS for name in ("recall", "all_recall", "ndcg")),
)


def _block(results: Sequence[EvalResult], judge: dict[int, float]) -> dict[str, Any]:
    """The metrics of one group; ``judge`` maps positions *within the group* to scores."""
    answered = [r for r in results if r.prediction is not None and r.error is None]
    block: dict[str, Any] = {
        "questions": len(results),
        "answered": len(answered),
        "errors": sum(r.error is not None for r in results),
    }
    answer_metrics: dict[str, Callable[[EvalResult, str], float | None]] = {
        "f1": _f1,
        "bleu1": _bleu1,
        "exact_match": _exact_match,
    }
    for name, metric in answer_metrics.items():
        values = [metric(r, r.prediction) for r in answered if r.prediction is not None]
        block[name] = _mean([value for value in values if value is not None])
    judged = [judge[i] for i in range(len(results)) if i in judge]
    block["judged"] = len(judged)
    block["judge"] = _mean(judged)

    containment = [c for c in map(context_containment, results) if c is not None]
    block["with_evidence"] = len(containment)
    block["context_recall"] = _mean(containment)
    block["context_recall_any"] = _mean([float(c > 0) for c in containment])
    block["context_recall_all"] = _mean([float(c == 1) for c in containment])

    ranked = [r for r in results if r.ranked_turn_ids is not None and r.evidence_turns]
    block["ranked"] = len(ranked)
    for k in RANK_KS:
        recall, all_recall, ndcg = [], [], []
        for r in ranked:
            assert r.ranked_turn_ids is not None
            recall.append(evidence_recall_at_k(r.ranked_turn_ids, r.evidence_turns, k))
            all_recall.append(all_evidence_recall_at_k(r.ranked_turn_ids, r.evidence_turns, k))
            ndcg.append(ndcg_at_k(r.ranked_turn_ids, r.evidence_turns, k))
        block[f"recall@{k}"] = _mean(recall)
        block[f"all_recall@{k}"] = _mean(all_recall)
        block[f"ndcg@{k}"] = _mean(ndcg)
    return block


def _group(
    results: Sequence[EvalResult], judge: dict[int, float], keep: Iterable[int]
) -> dict[str, Any]:
    members = list(keep)
    # A question the memory failed on has no score: it is counted, not averaged.
    indices = [i for i in members if results[i].memory_error is None]
    local = {position: judge[i] for position, i in enumerate(indices) if i in judge}
    block = _block([results[i] for i in indices], local)
    block["questions"] = len(members)
    block["memory_errors"] = len(members) - len(indices)
    return {
        "questions": block.pop("questions"),
        "memory_errors": block.pop("memory_errors"),
        **block,
    }


def compute_metrics(
    results: Sequence[EvalResult], judge_scores: Sequence[float] | None = None
) -> dict[str, Any]:
    """Per-category and overall metrics of ``results`` (from :func:`run_eval`).

    Returns a JSON-ready dict:

    * ``"overall"`` -- every question except LoCoMo's adversarial category (the
      1,540 LoCoMo questions mem0 reports); LongMemEval abstention questions
      keep their type and count here, as in the official overall.
    * ``"overall_with_adversarial"`` -- every question (as MAGMA reports).
    * ``"by_category"`` -- one block per category present, by category value.
    * ``"counts"`` -- ``questions``, ``memory_errors`` (questions a memory call
      failed on), ``answered``, ``errors`` (failed LLM calls), ``unanswered``
      (no LLM), ``judged``, ``judge_errors`` (answered but not judged).
    * ``"errors"`` -- ``{"sample_id", "question_id", "error"}`` of each failed call.
    * ``"memory_errors"`` -- each :class:`~himga.eval.MemoryCallError`, as a dict.
    * ``"longmemeval_retrieval"`` -- LongMemEval runs of a searchable memory only:
      the official retrieval metrics (see
      :func:`~himga.eval.longmemeval_retrieval_metrics`).

    Each block has ``questions``, ``memory_errors``, ``answered``, ``errors``.
    Questions with a memory error are excluded from every metric of the block
    (``memory_errors`` says how many); of the others, answer metrics over
    the answered questions -- ``f1`` (:func:`~himga.eval.metrics.locomo_f1` for
    LoCoMo categories, plain token F1 otherwise), ``bleu1``, ``exact_match``
    (unanswerable questions -- ``adversarial`` -- take part only in LoCoMo's
    ``f1``, whose official rule for them ignores the gold: their gold is a
    distractor or an explanation, not an answer to match), and
    ``judge`` (mean judge score over the ``judged`` questions); context
    containment over the ``with_evidence`` questions -- ``context_recall`` (mean
    fraction of evidence turns found in the context), ``context_recall_any``,
    ``context_recall_all``; rank metrics over the ``ranked`` questions (searchable
    memory, non-empty evidence) -- ``recall@k``, ``all_recall@k`` and ``ndcg@k``
    for k in ``RANK_KS``. A metric with nothing to average is ``None``. Results
    with an error are never scored as wrong: they are only counted.

    ``judge_scores`` (e.g. from :func:`~himga.eval.judge.batch_judge`) align
    with ``results``; ``NaN`` marks an unjudged result.
    """
    if judge_scores is not None and len(judge_scores) != len(results):
        raise ValueError(f"judge_scores has {len(judge_scores)} scores for {len(results)} results")
    judge = {
        i: float(score)
        for i, score in enumerate(judge_scores or ())
        if not math.isnan(score) and results[i].error is None and results[i].memory_error is None
    }
    everything = range(len(results))
    by_category: dict[str, Any] = {}
    for category in Category:
        members = [i for i in everything if results[i].category is category]
        if members:
            by_category[category.value] = _group(results, judge, members)
    answered = sum(r.prediction is not None and r.error is None for r in results)
    errors = [r for r in results if r.error is not None]
    memory_errors = [r.memory_error for r in results if r.memory_error is not None]
    metrics: dict[str, Any] = {
        "counts": {
            "questions": len(results),
            "memory_errors": len(memory_errors),
            "answered": answered,
            "errors": len(errors),
            "unanswered": sum(
                r.prediction is None and r.error is None and r.memory_error is None for r in results
            ),
            "judged": len(judge),
            "judge_errors": answered - len(judge) if judge_scores is not None else 0,
        },
        "overall": _group(
            results,
            judge,
            (i for i in everything if results[i].category is not Category.ADVERSARIAL),
        ),
        "overall_with_adversarial": _group(results, judge, everything),
        "by_category": by_category,
        "errors": [
            {"sample_id": r.sample_id, "question_id": r.question_id, "error": r.error}
            for r in errors
        ],
        "memory_errors": [asdict(error) for error in memory_errors],
    }
    retrieval = longmemeval_retrieval_metrics([r for r in results if r.memory_error is None])
    if retrieval is not None:
        metrics["longmemeval_retrieval"] = retrieval
    describe = getattr(judge_scores, "describe", None)
    if callable(describe):
        metrics["judge"] = describe()
    return metrics

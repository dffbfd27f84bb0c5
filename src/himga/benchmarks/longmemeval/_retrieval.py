"""LongMemEval's official retrieval metrics: recall_any@k, recall_all@k, ndcg_any@k.

The definitions are those of the official evaluation code, ``src/retrieval/eval_utils.py``
and ``src/retrieval/run_retrieval.py`` of xiaowu0162/LongMemEval, followed exactly:

* turn level -- ``evaluate_retrieval``: the gold is the set of ``has_answer`` turns;
  ``recall_any@k`` is 1 when any of them is in the top ``k``, ``recall_all@k`` when all
  are (so 1 for a question with no gold turn, as ``all([])``), ``ndcg_any@k`` the
  binary nDCG with the official DCG, ``rel_1 + sum_{i>=2} rel_i / log2(i)`` (ranks 1
  and 2 both weigh 1), against the ideal of the whole corpus (0 when no gold turn);
* session level from a turn ranking -- ``evaluate_retrieval_turn2session``: every
  ranked turn stands for its session; ``k`` grows to the smallest ``k' >= k`` whose top
  ``k'`` turns cover ``k`` distinct sessions, and the turn-level formulas are applied at
  ``k'`` with the gold being the sessions holding a ``has_answer`` turn -- so nDCG
  counts every ranked turn of a gold session, against an ideal of ``min(k', number of
  turns in gold sessions)``;
* abstention questions (``_abs`` in the question id) are excluded, as
  ``src/evaluation/print_retrieval_metrics.py`` does; ``k`` in ``1, 3, 5, 10, 30, 50``.

Two differences follow from himga's setting, not from the formulas. The official
retrievers index user turns only, so their gold is the user ``has_answer`` turns;
himga's memories decide what they index, so the gold is every ``has_answer`` turn.
And the official rankings order the whole corpus, while a memory's ``search`` returns
at most the run's search depth: a session-level value whose ``k'`` would need turns
beyond a depth-truncated ranking is undefined (``None``, counted in ``undefined``),
never guessed, and so is an nDCG whose ideal needs the size of a gold session that is
unknown (pass ``session_sizes`` to make it known).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from himga.benchmarks.longmemeval._categories import CATEGORIES
from himga.scoring._result import SEARCH_K

if TYPE_CHECKING:
    from himga.data.schema import Sample
    from himga.scoring._result import EvalResult

__all__ = [
    "LONGMEMEVAL_KS",
    "RetrievalScores",
    "longmemeval_retrieval_metrics",
    "session_retrieval",
    "session_sizes",
    "turn_retrieval",
]

LONGMEMEVAL_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
"""The cut-offs of the official script."""

RetrievalScores = tuple[float, float, float]
"""``(recall_any, recall_all, ndcg_any)`` of one question at one ``k``."""

_METRICS = ("recall_any", "recall_all", "ndcg_any")


def _dcg(relevances: Sequence[float]) -> float:
    # The official dcg(): the first rank undiscounted, rank i >= 2 divided by log2(i).
    if not relevances:
        return 0.0
    return relevances[0] + sum(r / math.log2(i) for i, r in enumerate(relevances[1:], start=2))


def _evaluate(
    ranked: Sequence[str | None], correct: Collection[str], k: int, relevant_in_corpus: int
) -> RetrievalScores:
    """The official ``evaluate_retrieval`` on ranked ids (``None`` never relevant)."""
    recalled = set(ranked[:k])
    recall_any = float(any(doc in recalled for doc in correct))
    recall_all = float(all(doc in recalled for doc in correct))
    ideal = _dcg([1.0] * min(k, relevant_in_corpus))
    if ideal == 0:
        return recall_any, recall_all, 0.0
    actual = _dcg([float(doc is not None and doc in correct) for doc in ranked[:k]])
    return recall_any, recall_all, actual / ideal


def _distinct(ranked: Sequence[str | None]) -> list[str | None]:
    # The official rankings are permutations of the corpus: a repeated id counts once.
    seen: set[str] = set()
    out: list[str | None] = []
    for turn in ranked:
        if turn is None:
            out.append(None)
        elif turn not in seen:
            seen.add(turn)
            out.append(turn)
    return out


def turn_retrieval(ranked: Sequence[str | None], gold: Collection[str], k: int) -> RetrievalScores:
    """Turn-level ``(recall_any, recall_all, ndcg_any)`` at ``k`` of one question."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    correct = set(gold)
    return _evaluate(_distinct(ranked), correct, k, len(correct))


def _session_of(turn: str) -> str:
    return turn.rpartition(":")[0]


def session_retrieval(
    ranked: Sequence[str | None],
    gold: Collection[str],
    k: int,
    *,
    complete: bool,
    sizes: Mapping[str, int] | None = None,
) -> tuple[float | None, float | None, float | None]:
    """Session-level scores at ``k`` of one turn ranking (``"<session>:<index>"`` ids).

    ``complete`` says the ranking holds every turn the memory would rank (it was not
    cut at the search depth); ``sizes`` maps each session of the haystack to its
    number of turns, when known. A score that cannot be computed exactly from these
    is ``None``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    turns = _distinct(ranked)
    sessions = [None if turn is None else _session_of(turn) for turn in turns]
    correct = {_session_of(turn) for turn in gold}
    gold_turns = None if sizes is None else sum(sizes.get(s, 0) for s in correct)
    covered: set[str] = set()
    effective = 0
    for session in sessions:
        if len(covered) >= k:
            break
        effective += 1
        if session is not None:
            covered.add(session)
    if len(covered) < k:
        # The official loop then runs k' past the whole corpus when the haystack has
        # fewer than k sessions (every session is recalled); otherwise k' depends on
        # turns this ranking does not order.
        if not complete or sizes is None or len(sizes) >= k:
            return None, None, None
        recall_any = float(any(session in sizes for session in correct))
        recall_all = float(all(session in sizes for session in correct))
        ranks_every_turn = sum(t is not None for t in turns) == sum(sizes.values())
        if not ranks_every_turn and gold_turns:
            return recall_any, recall_all, None
        _, _, ndcg = _evaluate(sessions, correct, len(sessions), gold_turns or 0)
        return recall_any, recall_all, ndcg
    if gold_turns is None:
        known = _turns_named(turns, gold, correct)
        # min(k', n) is k' for every n >= k': a lower bound of n that reaches k' suffices.
        gold_turns = known if known >= effective else None
    recall_any, recall_all, ndcg = _evaluate(sessions, correct, effective, gold_turns or 0)
    return recall_any, recall_all, (ndcg if gold_turns is not None else None)


def _turns_named(turns: Sequence[str | None], gold: Collection[str], correct: set[str]) -> int:
    """A lower bound of the turns in gold sessions: each id ``"<s>:<i>"`` implies ``i + 1``."""
    highest: dict[str, int] = {}
    for turn in [*turns, *gold]:
        if turn is None:
            continue
        session, _, index = turn.rpartition(":")
        if session in correct and index.isascii() and index.isdigit():  # not '²'
            highest[session] = max(highest.get(session, 0), int(index) + 1)
    return sum(highest.values())


def session_sizes(samples: Iterable[Sample]) -> dict[str, dict[str, int]]:
    """``{sample_id: {session_id: number of turns}}``, for exact session-level nDCG."""
    return {
        sample.sample_id: {session.session_id: len(session.messages) for session in sample.sessions}
        for sample in samples
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _block(
    results: Sequence[EvalResult],
    sizes: Mapping[str, Mapping[str, int]] | None,
    depth: int,
) -> dict[str, Any]:
    values: dict[str, dict[str, list[float]]] = {"turn": {}, "session": {}}
    undefined: dict[str, dict[str, int]] = {"turn": {}, "session": {}}
    for result in results:
        assert result.ranked_turn_ids is not None
        ranked, gold = result.ranked_turn_ids, result.evidence_turns
        complete = len(ranked) < depth
        of_sample = None if sizes is None else sizes.get(result.sample_id)
        for k in LONGMEMEVAL_KS:
            scores: dict[str, Sequence[float | None]] = {
                "turn": turn_retrieval(ranked, gold, k),
                "session": session_retrieval(ranked, gold, k, complete=complete, sizes=of_sample),
            }
            for level, triple in scores.items():
                for name, value in zip(_METRICS, triple, strict=True):
                    key = f"{name}@{k}"
                    if value is None:
                        undefined[level][key] = undefined[level].get(key, 0) + 1
                    else:
                        values[level].setdefault(key, []).append(value)
    block: dict[str, Any] = {"questions": len(results)}
    for level in ("turn", "session"):
        block[level] = {
            f"{name}@{k}": _mean(values[level].get(f"{name}@{k}", []))
            for k in LONGMEMEVAL_KS
            for name in _METRICS
        }
    block["undefined"] = {level: counts for level, counts in undefined.items() if counts}
    return block


def _in_report_order(found: Iterable[str]) -> list[str]:
    present = set(found)
    return [c for c in CATEGORIES if c in present] + sorted(present.difference(CATEGORIES))


def longmemeval_retrieval_metrics(
    results: Sequence[EvalResult],
    *,
    session_sizes: Mapping[str, Mapping[str, int]] | None = None,
    depth: int | None = None,
) -> dict[str, Any] | None:
    """LongMemEval's retrieval metrics over the LongMemEval results with a ranking.

    ``None`` when there is none (not LongMemEval, or a memory without ``search``).
    Returns ``{"questions", "excluded_abstention", "turn", "session", "undefined",
    "by_category"}``: ``turn`` and ``session`` map ``"<metric>@<k>"`` to the mean
    over the questions where it is defined; ``undefined`` counts the others per
    level and metric (omitted when none). ``depth`` is the number of hits the run
    asked ``search`` for (default: :data:`~himga.scoring.SEARCH_K`, the default
    ``search_k`` of :class:`~himga.eval.EvalOptions`);
    ``session_sizes`` (from :func:`session_sizes`) makes every nDCG computable.
    """
    if depth is None:
        depth = SEARCH_K
    ranked = [
        r for r in results if r.dataset.startswith("longmemeval") and r.ranked_turn_ids is not None
    ]
    if not ranked:
        return None
    # The official script drops every question whose id contains "_abs".
    kept = [r for r in ranked if "_abs" not in r.question_id]
    metrics = _block(kept, session_sizes, depth)
    metrics["excluded_abstention"] = len(ranked) - len(kept)
    metrics["by_category"] = {
        category: _block(members, session_sizes, depth)
        for category in _in_report_order(r.category for r in kept)
        if (members := [r for r in kept if r.category == category])
    }
    return metrics

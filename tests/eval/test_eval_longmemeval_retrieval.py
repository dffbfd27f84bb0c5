"""LongMemEval's retrieval metrics agree with the official code on every ranking it can score."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.longmemeval import (
    LONGMEMEVAL_KS,
    longmemeval_retrieval_metrics,
    session_retrieval,
    turn_retrieval,
)
from himga.data.schema import Category
from himga.eval import EvalResult, compute_metrics

# --- the official code (xiaowu0162/LongMemEval, src/retrieval/eval_utils.py), ported
# --- verbatim but for np.asfarray, which numpy 2 removed.


def official_dcg(relevances: list[int], k: int) -> float:
    rel = np.asarray(relevances, dtype=float)[:k]
    if rel.size:
        return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))
    return 0.0


def official_ndcg(
    rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int
) -> float:
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = official_dcg(ideal_relevance, k)
    actual_dcg = official_dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.0
    return actual_dcg / ideal_dcg


def official_evaluate(
    rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int
) -> tuple[float, float, float]:
    recalled_docs = {corpus_ids[idx] for idx in rankings[:k]}
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    return recall_any, recall_all, official_ndcg(rankings, correct_docs, corpus_ids, k)


def official_turn2session(
    rankings: list[int], correct_docs: list[str], corpus_ids: list[str], k: int
) -> tuple[float, float, float]:
    def strip_turn_id(docid: str) -> str:
        return "_".join(docid.split("_")[:-1])

    correct_docs = list({strip_turn_id(x) for x in correct_docs})
    corpus_ids = [strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique_docids = {corpus_ids[idx] for idx in rankings[:effective_k]}
    while effective_k <= len(corpus_ids) and len(unique_docids) < k:
        effective_k += 1
        unique_docids = {corpus_ids[idx] for idx in rankings[:effective_k]}
    return official_evaluate(rankings, correct_docs, corpus_ids, k=effective_k)


# --- random haystacks, rankings and gold ----------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[str], list[int], list[str], dict[str, int]]:
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=12))
    corpus = [f"s{s}:{t}" for s, size in enumerate(sizes) for t in range(size)]
    rankings = draw(st.permutations(range(len(corpus))))
    gold = draw(st.lists(st.sampled_from(corpus), max_size=4, unique=True))
    return corpus, list(rankings), gold, {f"s{s}": size for s, size in enumerate(sizes)}


def _official_ids(ids: list[str]) -> list[str]:
    return [i.replace(":", "_") for i in ids]  # the official ids are "<session>_<turn>"


@given(cases(), st.sampled_from(LONGMEMEVAL_KS))
def test_full_rankings_match_the_official_code(
    case: tuple[list[str], list[int], list[str], dict[str, int]], k: int
) -> None:
    corpus, rankings, gold, sizes = case
    ranked = [corpus[i] for i in rankings]
    official_corpus, official_gold = _official_ids(corpus), _official_ids(gold)
    assert turn_retrieval(ranked, gold, k) == pytest.approx(
        official_evaluate(rankings, official_gold, official_corpus, k)
    )
    expected = official_turn2session(rankings, official_gold, official_corpus, k)
    assert session_retrieval(ranked, gold, k, complete=True, sizes=sizes) == pytest.approx(expected)


@given(cases(), st.sampled_from(LONGMEMEVAL_KS), st.integers(0, 60), st.booleans(), st.booleans())
def test_truncated_rankings_are_exact_or_undefined(
    case: tuple[list[str], list[int], list[str], dict[str, int]],
    k: int,
    depth: int,
    complete: bool,
    with_sizes: bool,
) -> None:
    # A memory returns the head of some full ranking; whatever is returned as a number
    # must equal the official value for that full ranking.
    corpus, rankings, gold, sizes = case
    head = [corpus[i] for i in rankings[:depth]]
    complete = complete and depth >= len(corpus)  # only a full ranking is complete here
    got = session_retrieval(head, gold, k, complete=complete, sizes=sizes if with_sizes else None)
    expected = official_turn2session(rankings, _official_ids(gold), _official_ids(corpus), k)
    for value, official in zip(got, expected, strict=True):
        assert value is None or value == pytest.approx(official)


def test_known_values() -> None:
    ranked = ["a:0", "b:0", "a:1", "c:0"]
    # recall_any, recall_all, ndcg with the official DCG (ranks 1 and 2 both weigh 1)
    assert turn_retrieval(ranked, ["b:0", "c:0"], 1) == (0.0, 0.0, 0.0)
    assert turn_retrieval(ranked, ["b:0", "c:0"], 3) == pytest.approx((1.0, 0.0, 1 / 2))
    assert turn_retrieval(ranked, [], 5) == (0.0, 1.0, 0.0)  # all([]) is true, as officially
    # session level: k=2 needs the top 2 turns ("a", "b"); gold session b has 1 turn
    sizes = {"a": 2, "b": 1, "c": 1}
    assert session_retrieval(ranked, ["b:0"], 2, complete=True, sizes=sizes) == (1.0, 1.0, 1.0)
    assert session_retrieval(ranked, ["b:0"], 1, complete=True, sizes=sizes) == (0.0, 0.0, 0.0)
    # fewer than k sessions in the haystack: everything is recalled
    assert session_retrieval(ranked, ["c:0"], 5, complete=True, sizes=sizes)[:2] == (1.0, 1.0)
    # cut at the search depth before k sessions: undefined, not a guess
    assert session_retrieval(ranked, ["c:0"], 5, complete=False, sizes=sizes) == (None,) * 3


def _result(question_id: str, ranked: tuple[str, ...], evidence: tuple[str, ...]) -> EvalResult:
    return EvalResult(
        sample_id=question_id,
        question_id=question_id,
        dataset="longmemeval_oracle",
        category=Category.MULTI_SESSION,
        question="q",
        answer="a",
        adversarial=question_id.endswith("_abs"),
        evidence_turns=evidence,
        evidence_texts=(None,) * len(evidence),
        context="",
        ranked_turn_ids=ranked,
        retrieval_latency_s=0.0,
    )


def test_aggregate_excludes_abstention_and_is_in_compute_metrics() -> None:
    results = [
        _result("q1", ("a:0", "b:0"), ("a:0",)),
        _result("q2", ("a:0", "b:0"), ("b:0",)),
        _result("q3_abs", ("a:0",), ()),
    ]
    metrics = longmemeval_retrieval_metrics(results, depth=50)
    assert metrics is not None
    assert metrics["questions"] == 2
    assert metrics["excluded_abstention"] == 1
    assert metrics["turn"]["recall_any@1"] == 0.5
    assert metrics["turn"]["recall_all@3"] == 1.0
    assert metrics["by_category"]["multi-session"]["questions"] == 2
    assert compute_metrics(results)["longmemeval_retrieval"] == longmemeval_retrieval_metrics(
        results
    )
    locomo = [dataclasses.replace(r, dataset="locomo") for r in results]
    assert "longmemeval_retrieval" not in compute_metrics(locomo)
    assert longmemeval_retrieval_metrics(locomo) is None

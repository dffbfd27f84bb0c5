"""LoCoMo-Plus: upstream's judge templates, verbatim, and their parsing and scoring."""

from __future__ import annotations

import hashlib

import pytest

from himga.benchmarks import Judge, UnjudgeableError
from himga.benchmarks.locomo_plus import (
    LABEL_SCORES,
    METRICS,
    PROMPTS,
    LocomoPlusJudge,
    benchmarks,
)
from himga.eval import EvalResult
from tests.eval.test_eval_support import make_result

# SHA-256 of each template of PROMPT_TEMPLATES in evaluation_framework/task_eval/prompt.py
# of xjtuleeyf/Locomo-Plus at 059f4e3d38f7f1f96765e8e2cb7de3097551bffb (the file's sha256
# e43e3ee7115a30938e727fe0eab16694186c08e3f9619f9d8dd5e603d96fc2b1), hashed there.
UPSTREAM_SHA256 = {
    "multi-hop": "6eba7bc55145d57a06c90fb96a9daf7965b68dbb480b975d2b1583b59124741a",
    "single-hop": "e0cc6dfb7fb33aeafeed27e6db214eff15278738298384817479f09f5f5997d4",
    "temporal": "f951d90c7a759c12eff5ceeb963129c2be79b529209b9fb2ddcfbafb2a40aa3d",
    "common-sense": "3147a06f69f3229233ecb367249c42afe6485d45c18957c6d2286a2eb28ea904",
    "adversarial": "2a73bc69e8051121a6332c3fb14605574bacc3cb58173fdd72b5803f4bd40a69",
    "Cognitive": "83875348ab831a4f2932457bc951d37654db9f77ecaf50e7a8aacf5ff566a08b",
}


def test_templates_are_upstreams_verbatim() -> None:
    hashes = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in PROMPTS.items()}
    assert hashes == UPSTREAM_SHA256
    judge: Judge = LocomoPlusJudge()
    assert dict(judge.prompts) == {f"locomo-plus-{k}": v for k, v in PROMPTS.items()}


_OVERLAP = ("f1", "bleu1", "exact_match")
_CUE = "Ann：I learned to say no.\nBob：Good for you."


def _cognitive(prediction: str = "Didn't you decide to say no more often?") -> EvalResult:
    return make_result(
        dataset="locomo-plus",
        category="causal",
        question="Ann: I volunteered again and I'm swamped.",
        answer="",
        prediction=prediction,
        gold={"upstream_category": "Cognitive", "evidence": _CUE, "time_gap": "two weeks later"},
    )


def test_cognitive_request_is_the_filled_template() -> None:
    (request,) = LocomoPlusJudge().requests(_cognitive())
    assert request.prompt == "locomo-plus-Cognitive"
    assert request.max_tokens == 512
    assert request.text.startswith("\nYou are a Memory Awareness Judge.\n")
    assert (
        "Memory/Evidence:\nAnn：I learned to say no.\nBob：Good for you.\n\n"
        "Model Prediction:\nDidn't you decide to say no more often?\n\n"
    ) in request.text
    assert request.text.endswith(
        '{"label": "correct"|"wrong", "reason": "<Does the prediction relate to the evidence?>"}\n'
    )


def test_locomo_request_fills_gold_and_evidence() -> None:
    result = make_result(
        gold={"upstream_category": "common-sense", "evidence": "Ann：I went to Paris"}
    )
    (request,) = LocomoPlusJudge().requests(result)
    assert request.prompt == "locomo-plus-common-sense"
    assert "Reference Answer:\nParis\n\nModel Prediction:\nParis\n\n" in request.text
    assert "Relevant Evidence:\nAnn：I went to Paris\n" in request.text


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "correct", "reason": "it recalls the cue"}', "correct"),
        ('```json\n{"label": "Wrong", "reason": ""}\n```', "wrong"),
        ('Verdict: {"label": "partial", "reason": "vague"} -- done', "partial"),
        ("{'label': 'correct', 'reason': 'single quotes'}", "correct"),
    ],
)
def test_parse_reads_the_json_label(reply: str, label: str) -> None:
    judge = LocomoPlusJudge()
    (request,) = judge.requests(_cognitive())
    assert judge.parse(request, reply) == label


@pytest.mark.parametrize(
    "reply",
    [
        "incorrect",  # upstream's fallback finds "correct" in it and scores 1
        "The prediction is correct.",
        '{"label": "maybe", "reason": ""}',
        '{"label": "correct"} or {"label": "wrong"}',
        "",
    ],
)
def test_parse_without_one_label_is_unjudgeable(reply: str) -> None:
    judge = LocomoPlusJudge()
    (request,) = judge.requests(_cognitive())
    with pytest.raises(UnjudgeableError):
        judge.parse(request, reply)


@pytest.mark.parametrize(("label", "score"), [("correct", 1.0), ("partial", 0.5), ("wrong", 0.0)])
def test_score_is_upstreams(label: str, score: float) -> None:
    assert LocomoPlusJudge().score(_cognitive(), [label]) == score
    assert LABEL_SCORES[label] == score


def test_answer_overlap_metrics_skip_items_and_keep_locomos() -> None:
    f1, bleu, em = METRICS
    assert (f1.name, bleu.name, em.name) == _OVERLAP
    item = _cognitive("I learned to say no.")
    assert [m.score(item, 1.0) for m in (f1, bleu, em)] == [None, None, None]
    locomo = make_result(gold={"upstream_category": "single-hop", "evidence": ""})
    assert [m.score(locomo, None) for m in (f1, bleu, em)] == [1.0, 1.0, 1.0]
    # LoCoMo's official F1 scores an adversarial question by its abstention words
    adversarial = make_result(
        category="adversarial",
        adversarial=True,
        prediction="Not mentioned in the conversation",
        gold={"upstream_category": "adversarial", "evidence": ""},
    )
    assert [m.score(adversarial, None) for m in (f1, bleu, em)] == [1.0, None, None]
    assert all(tuple(b.metrics) == METRICS for b in benchmarks())

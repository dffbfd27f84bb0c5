"""LoCoMo-Plus end to end through the official SDK and a loopback fake LLM: answer + judge."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from himga.benchmarks import load_dataset
from himga.benchmarks.locomo_plus import PROMPTS
from himga.eval import compute_metrics
from himga.llm import ChatMessage
from tests.benchmarks.test_benchmarks_locomo_plus import shared_plus  # noqa: F401  (fixture)
from tests.fake_llm_support import answer_and_judge

_COGNITIVE_HEAD = PROMPTS["Cognitive"].split("{evidence}")[0]
_SECTIONS = re.compile(r"Memory/Evidence:\n(.*)\n\nModel Prediction:\n(.*)\n\nReturn", re.DOTALL)
_WORD = re.compile(r"[a-z]{6,}")


def _overlaps(evidence: str, prediction: str) -> bool:
    """The fake judge's rule: a word of six letters or more of the cue in the reply."""
    return bool(set(_WORD.findall(evidence.lower())) & set(_WORD.findall(prediction.lower())))


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if prompt.startswith(_COGNITIVE_HEAD):
        match = _SECTIONS.search(prompt)
        assert match is not None
        evidence, prediction = match.groups()
        if "UNJUDGEABLE" in prediction:
            return "I cannot tell."
        label = "correct" if _overlaps(evidence, prediction) else "wrong"
        return f'```json\n{{"label": "{label}", "reason": "fake"}}\n```'
    # The answer: echo the first remembered line, so whether it reflects the cue
    # depends on what the memory retrieved.
    remembered = [line for line in prompt.splitlines() if line.startswith("[")]
    if "volunteer" in prompt.lower():
        return "UNJUDGEABLE"
    return remembered[0] if remembered else "Not mentioned in the conversation"


@pytest.mark.slow
def test_answer_and_cognitive_judge_end_to_end(
    shared_plus: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # three items of each relation type (the file lists them by type)
    wanted = [f"plus-{i:03d}" for start in (0, 101, 201, 301) for i in range(start, start + 3)]
    samples = load_dataset("locomo-plus", path=shared_plus / "locomo_plus", ids=wanted)
    results, scores, requests = answer_and_judge(samples, _responder, "anthropic", monkeypatch)
    judge_prompts = [
        r.messages[-1]["content"]
        for r in requests
        if r.messages[-1]["content"].startswith(_COGNITIVE_HEAD)
    ]
    metrics = compute_metrics(results, scores)
    assert [r.question_id for r in results] == [s.qa_pairs[0].question_id for s in samples]
    assert len(judge_prompts) == len(results)
    unjudgeable, labels = 0, set()
    for result, score in zip(results, scores, strict=True):
        assert result.prediction is not None
        assert result.gold["upstream_category"] == "Cognitive"
        if result.prediction == "UNJUDGEABLE":
            assert math.isnan(score)
            unjudgeable += 1
        else:
            assert score == float(_overlaps(result.gold["evidence"], result.prediction))
            labels.add(score)
    # item 0's trigger ("I ended up volunteering ...") has no verdict: recorded, not scored 0
    assert unjudgeable >= 1
    assert len(scores.errors) == unjudgeable
    assert labels == {0.0, 1.0}  # the fake judge said both
    assert "locomo-plus-Cognitive" in scores.prompt_hashes
    assert set(metrics["by_category"]) == {"causal", "state", "goal", "value"}
    assert 0.0 <= metrics["overall"]["judge"] <= 1.0

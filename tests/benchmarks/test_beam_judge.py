"""BEAM's judge: the requests it sends, how it reads replies, and scores on hand-worked cases."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from himga.benchmarks import Judge, JudgeRequest, UnjudgeableError
from himga.benchmarks.beam import BeamJudge, parse_equivalence, parse_rubric_verdict
from himga.benchmarks.beam._prompts import EQUIVALENCE_PROMPT, RUBRIC_PROMPT
from himga.scoring._result import EvalResult
from tests.eval.test_eval_support import make_result


def _result(category: str, prediction: str, rubric: list[str], question: str = "Q?") -> EvalResult:
    return make_result(
        sample_id="1",
        question_id=f"1:{category}[0]",
        dataset="beam-100k",
        category=category,
        question=question,
        answer="gold",
        adversarial=category == "abstention",
        evidence_turns=(),
        evidence_texts=(),
        context="",
        prediction=prediction,
        gold={"rubric": rubric},
    )


def _judged(judge: BeamJudge, result: EvalResult, reply: Callable[[JudgeRequest], str]) -> float:
    requests = judge.requests(result)
    return judge.score(result, [judge.parse(r, reply(r)) for r in requests])


def test_beam_judge_is_a_judge() -> None:
    assert isinstance(BeamJudge(), Judge)
    assert set(BeamJudge().prompts.values()) == {RUBRIC_PROMPT, EQUIVALENCE_PROMPT}
    # The two scorings send the same templates under different names (the run
    # identity hashes the names, so it tells them apart).
    assert set(BeamJudge().prompts).isdisjoint(BeamJudge(official=True).prompts)


def test_one_rubric_request_per_item_with_the_question_filled() -> None:
    result = _result("information_extraction", "It ends March 29.", ["states March 29", "polite"])
    requests = BeamJudge().requests(result)
    assert [r.prompt for r in requests] == ["beam-rubric", "beam-rubric"]
    first = requests[0].text
    assert "- QUESTION (what the user asked): Q?\n" in first
    assert "- RUBRIC CRITERION (what to check): states March 29\n" in first
    assert "- RESPONSE TO EVALUATE: It ends March 29.\n" in first
    assert "<question>" not in first
    assert "<rubric_item>" not in first


def test_the_official_prompt_leaves_the_question_slot_unfilled() -> None:
    result = _result("information_extraction", "It ends March 29.", ["states March 29"])
    (request,) = BeamJudge(official=True).requests(result)
    assert request.prompt == "beam-rubric-official"
    assert "- QUESTION (what the user asked): <question>\n" in request.text
    assert request.text == RUBRIC_PROMPT.replace("<rubric_item>", "states March 29").replace(
        "<llm_response>", "It ends March 29."
    )


def test_a_filled_value_is_never_filled_again() -> None:
    result = _result("summarization", "I quote <question> and <rubric_item>.", ["x"], "Why?")
    (request,) = BeamJudge().requests(result)
    assert "RESPONSE TO EVALUATE: I quote <question> and <rubric_item>.\n" in request.text


def test_half_points_count_half_except_officially() -> None:
    result = _result("knowledge_update", "About 250ms.", ["a", "b", "c", "d"])
    verdicts = {"a": 1.0, "b": 0.5, "c": 0.5, "d": 0.0}

    def reply(request: JudgeRequest) -> str:
        item = request.text.split("RUBRIC CRITERION (what to check): ")[1].split("\n")[0]
        return f'{{"score": {verdicts[item]}, "reason": "..."}}'

    assert _judged(BeamJudge(), result, reply) == pytest.approx(0.5)
    assert _judged(BeamJudge(official=True), result, reply) == pytest.approx(0.25)


def _equivalence_reply(request: JudgeRequest) -> str:
    """A classifier that matches a line to an item when the line names it."""
    first = request.text.split("First snippet: ")[1].split(" \n")[0]
    second = request.text.split("Second snippet: ")[1].rsplit("\n", 1)[0]
    return "YES" if first.lower() in second.lower() else "NO"


def test_event_ordering_requests_every_item_line_pair() -> None:
    result = _result("event_ordering", "1. Setup\n2. Tests", ["Setup", "Tests", "Deploy"])
    requests = BeamJudge().requests(result)
    assert len(requests) == 6
    assert {r.prompt for r in requests} == {"beam-event-equivalence"}
    assert "First snippet: Setup \n\n" in requests[0].text
    assert "Second snippet: 1. Setup\n" in requests[0].text
    assert "First snippet: Tests " in requests[1].text  # the items of one line, in order


def test_event_ordering_by_hand() -> None:
    rubric = ["Setup", "Tests", "Deploy"]
    right = _result("event_ordering", "1. Setup\n2. Tests\n3. Deploy", rubric)
    assert _judged(BeamJudge(), right, _equivalence_reply) == 1.0
    reversed_ = _result("event_ordering", "Deploy\nTests\nSetup", rubric)
    assert _judged(BeamJudge(), reversed_, _equivalence_reply) == 0.0
    # Tests missing: ranks x = [1, 2, 3], y = [1, 4, 2]: tau 1/3, normalised 2/3.
    missing = _result("event_ordering", "Setup\nDeploy", rubric)
    assert _judged(BeamJudge(), missing, _equivalence_reply) == pytest.approx(2 / 3)


def test_blank_lines_cost_points_only_officially() -> None:
    spaced = _result(
        "event_ordering", "1. Setup\n\n2. Tests\n\n3. Deploy", ["Setup", "Tests", "Deploy"]
    )
    assert _judged(BeamJudge(), spaced, _equivalence_reply) == 1.0
    # Officially the blank lines are items: union [Setup, Tests, Deploy, ""], 5 of 6 pairs
    # concordant: tau 4/6, normalised 5/6.
    assert _judged(BeamJudge(official=True), spaced, _equivalence_reply) == pytest.approx(5 / 6)
    assert len(BeamJudge(official=True).requests(spaced)) == 15


def test_event_ordering_is_not_truncated_officially() -> None:
    result = _result("event_ordering", "Setup\nDeploy", ["Setup", "Tests", "Deploy"])
    official = _judged(BeamJudge(official=True), result, _equivalence_reply)
    assert official == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ('{"score": 1.0, "reason": "ok"}', 1.0),
        ('```json\n{"score": 0.5, "reason": "half"}\n```', 0.5),
        ('Here: {"score": 0, "reason": "no"} done', 0.0),
        ('{"score": "0.5", "reason": "quoted"}', 0.5),
        ('{"score": 1.0, "reason": "unterminated', 1.0),  # json_repair's case
    ],
)
def test_rubric_verdicts(reply: str, score: float) -> None:
    assert parse_rubric_verdict(reply) == score


@pytest.mark.parametrize(
    "reply", ["I think it complies.", '{"reason": "no score"}', '{"score": 2}', '{"score": true}']
)
def test_unjudgeable_rubric_replies(reply: str) -> None:
    with pytest.raises(UnjudgeableError):
        parse_rubric_verdict(reply)


def test_equivalence_is_yes_anywhere() -> None:
    assert parse_equivalence("YES") is True
    assert parse_equivalence("yes, the same") is True
    assert parse_equivalence("NO") is False
    assert parse_equivalence("") is False


def test_a_result_without_rubric_or_prediction_is_refused() -> None:
    judge = BeamJudge()
    with pytest.raises(ValueError, match="no rubric"):
        judge.requests(_result("summarization", "x", []))
    result = _result("summarization", "x", ["a"])
    with pytest.raises(ValueError, match="no prediction"):
        judge.requests(dataclasses.replace(result, prediction=None))

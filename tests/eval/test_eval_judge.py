"""batch_judge: prompt choice, strict verdict parsing, caching, errors as NaN with a reason."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import pytest

from himga.benchmarks import JudgeRequest, get_benchmark
from himga.benchmarks.locomo import PROMPTS as LOCOMO_PROMPTS
from himga.benchmarks.longmemeval import PROMPTS as LONGMEMEVAL_PROMPTS
from himga.data.schema import Category
from himga.eval import batch_judge, compute_metrics
from himga.eval.judge import UnjudgeableError
from himga.llm._protocol import ChatMessage
from tests.eval.test_eval_support import ScriptedLLM, make_result

JUDGE_PROMPTS = {**LOCOMO_PROMPTS, **LONGMEMEVAL_PROMPTS}


def parse_verdict(prompt: str, reply: str) -> object:
    """The verdict the judge that owns template ``prompt`` reads in ``reply``."""
    judge = get_benchmark("locomo" if prompt == "locomo" else "longmemeval_s").judge
    assert judge is not None
    return judge.parse(JudgeRequest(prompt, "", 0), reply)


def _grader(messages: Sequence[ChatMessage]) -> str:
    """Judges like a model would: right iff the response line says 'Paris'."""
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:
        said = prompt.split("Generated answer:")[1].split("\n")[0]
        label = "CORRECT" if "Paris" in said else "WRONG"
        return f'The answer refers to the same place. {{"label": "{label}"}}'
    said = prompt.split("Model Response:")[1].split("\n\n")[0]
    return "Yes." if ("Paris" in said or "not mentioned" in said) else "No."


@pytest.mark.parametrize(
    ("prompt", "reply", "verdict"),
    [
        ("locomo", '{"label": "CORRECT"}', 1.0),
        ("locomo", 'It names another city. {"label":"WRONG"}', 0.0),
        ("locomo", '```json\n{"label": "correct"}\n```', 1.0),
        ("locomo", "Same date in another format, so CORRECT", 1.0),
        ("locomo", "The answer is not correct: WRONG", 0.0),  # prose "correct" is not a label
        ("longmemeval-default", "Yes.", 1.0),
        ("longmemeval-abstention", "no", 0.0),
        ("longmemeval-temporal-reasoning", " YES ", 1.0),
    ],
)
def test_parse_verdict_reads_the_label(prompt: str, reply: str, verdict: float) -> None:
    assert parse_verdict(prompt, reply) == verdict


@pytest.mark.parametrize(
    ("prompt", "reply"),
    [
        ("locomo", "CORRECT or WRONG, hard to say"),
        ("locomo", "I cannot judge this."),
        ("locomo", '{"label": "MAYBE"}'),
        ("longmemeval-default", "yes and no"),
        ("longmemeval-default", "Yesterday, perhaps"),
        ("longmemeval-default", ""),
    ],
)
def test_parse_verdict_refuses_replies_without_a_single_verdict(prompt: str, reply: str) -> None:
    with pytest.raises(UnjudgeableError, match="verdict"):
        parse_verdict(prompt, reply)


def test_locomo_uses_mem0_prompt_and_adversarial_uses_the_abstention_prompt() -> None:
    llm = ScriptedLLM(reply=_grader)
    results = [
        make_result(question_id="q1", prediction="Paris, in May"),
        make_result(question_id="q2", prediction="Rome"),
        make_result(
            question_id="q3",
            category=Category.ADVERSARIAL,
            adversarial=True,
            answer="DISTRACTOR",
            prediction="That is not mentioned.",
        ),
    ]
    scores = batch_judge(results, llm=llm, show_progress=False)
    assert list(scores) == [1.0, 0.0, 1.0]
    first, _, third = (call[0]["content"] for call in llm.calls)
    assert first == JUDGE_PROMPTS["locomo"].format(
        question="Where did Ann go?", gold_answer="Paris", generated_answer="Paris, in May"
    )
    assert "unanswerable" in third
    assert "DISTRACTOR" not in third
    assert scores.model == "scripted-1"
    assert scores.provider == "scripted"
    assert scores.prompt_hashes == {
        name: hashlib.sha256(JUDGE_PROMPTS[name].encode()).hexdigest()
        for name in ("locomo", "longmemeval-abstention")
    }


@pytest.mark.parametrize(
    ("category", "abstention", "prompt"),
    [
        (Category.SINGLE_SESSION_USER, False, "longmemeval-default"),
        (Category.MULTI_SESSION, False, "longmemeval-default"),
        (Category.TEMPORAL_REASONING, False, "longmemeval-temporal-reasoning"),
        (Category.KNOWLEDGE_UPDATE, False, "longmemeval-knowledge-update"),
        (Category.SINGLE_SESSION_PREFERENCE, False, "longmemeval-single-session-preference"),
        (Category.MULTI_SESSION, True, "longmemeval-abstention"),
    ],
)
def test_longmemeval_uses_the_official_type_specific_prompt(
    category: Category, abstention: bool, prompt: str
) -> None:
    llm = ScriptedLLM(reply=_grader)
    result = make_result(dataset="longmemeval_s", category=category, adversarial=abstention)
    scores = batch_judge([result], llm=llm, show_progress=False)
    assert list(scores) == [1.0]
    assert llm.calls[0][0]["content"] == JUDGE_PROMPTS[prompt].format(
        question="Where did Ann go?", answer="Paris", response="Paris"
    )


def test_identical_judgements_are_asked_once_and_the_cache_is_reused() -> None:
    llm = ScriptedLLM(reply=_grader)
    results = [make_result(question_id=f"q{i}") for i in range(5)] + [
        make_result(prediction="Rome")
    ]
    cache: dict[str, float] = {}
    scores = batch_judge(results, llm=llm, cache=cache, show_progress=False)
    assert list(scores) == [1.0] * 5 + [0.0]
    assert len(llm.calls) == 2
    again = ScriptedLLM(reply=_grader)
    assert list(batch_judge(results, llm=again, cache=cache, show_progress=False)) == list(scores)
    assert again.calls == []


def test_unjudgeable_results_are_nan_with_a_reason_never_zero() -> None:
    results = [
        make_result(question_id="ok"),
        make_result(question_id="failed", prediction=None, error="APIError: boom"),
        make_result(question_id="garbled", prediction="Paris!"),
        make_result(question_id="down", prediction="Paris?"),
    ]

    def reply(messages: Sequence[ChatMessage]) -> str:
        return "hmm" if "Paris!" in messages[0]["content"] else '{"label": "CORRECT"}'

    llm = ScriptedLLM(reply=reply, fail=lambda prompt: "Paris?" in prompt)
    scores = batch_judge(results, llm=llm, show_progress=False)
    assert scores[0] == 1.0
    assert all(math.isnan(s) for s in scores[1:])
    assert "APIError: boom" in scores.errors[1]
    assert "UnjudgeableError" in scores.errors[2]
    assert "LLMFailure" in scores.errors[3]
    assert scores.describe()["errors"] == 3

    metrics = compute_metrics(results, scores)
    assert metrics["counts"]["judged"] == 1
    # answered but unjudged: "garbled" and "down"; "failed" is a run error, not a judge error
    assert metrics["counts"]["judge_errors"] == 2
    assert metrics["overall"]["judge"] == 1.0
    assert metrics["judge"]["model"] == "scripted-1"


# The official templates of get_anscheck_prompt (LongMemEval src/evaluation/evaluate_qa.py),
# filled positionally as there.
OFFICIAL_LME = {
    "longmemeval-default": (
        "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
    ),
    "longmemeval-temporal-reasoning": (
        "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
    ),
    "longmemeval-knowledge-update": (
        "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
    ),
    "longmemeval-single-session-preference": (
        "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."  # noqa: E501
    ),
    "longmemeval-abstention": (
        "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."  # noqa: E501
    ),
}


@pytest.mark.parametrize("name", sorted(OFFICIAL_LME))
def test_longmemeval_prompts_are_the_official_text(name: str) -> None:
    ours = JUDGE_PROMPTS[name].format(question="Q?", answer="A.", response="R.")
    assert ours == OFFICIAL_LME[name].format("Q?", "A.", "R.")


def test_locomo_prompt_is_pinned() -> None:
    # mem0's ACCURACY_PROMPT verbatim, trailing spaces included: any edit changes scores.
    prompt = JUDGE_PROMPTS["locomo"]
    assert prompt.startswith(
        "\nYour task is to label an answer to a question as ’CORRECT’ or ’WRONG’."
    )
    assert "    (2) a ’gold’ (ground truth) answer, \n" in prompt
    assert prompt.endswith('in a json format with the key as "label".\n')
    assert (
        hashlib.sha256(prompt.encode()).hexdigest()
        == "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0"
    )


def test_the_judge_draws_no_bar_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scores = batch_judge([make_result()], llm=ScriptedLLM(reply=_grader), show_progress=True)
    assert list(scores) == [1.0]
    assert capsys.readouterr().err == ""


class _LocalJudge(ScriptedLLM):
    """A judge whose weights are a file here, as ``--judge-llm local`` is."""

    provider = "local"

    @property
    def weights(self) -> dict[str, object]:
        return {"sha256": "ab" * 32, "runtime": "llama-cpp-python", "runtime_version": "0.3.36"}


def test_a_local_judge_names_its_model_file_in_the_manifest_entry() -> None:
    """A judge score without its judge's weights is not traceable: ``describe`` (what the
    manifest's judge entries hold) carries the file's SHA-256 for a local judge, and
    nothing new for a served one."""
    results = [make_result(prediction="Paris")]
    local = batch_judge(results, llm=_LocalJudge(reply=_grader), show_progress=False)
    assert local.describe()["weights"] == {
        "sha256": "ab" * 32,
        "runtime": "llama-cpp-python",
        "runtime_version": "0.3.36",
    }
    served = batch_judge(results, llm=ScriptedLLM(reply=_grader), show_progress=False)
    assert "weights" not in served.describe()

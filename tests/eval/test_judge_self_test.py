"""``himga judge-test``: the answer sets a judge must reject or accept, and the command
that fails a judge accepting wrong answers (issue 32, item 3)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks._offline import covered
from himga.data.schema import Message, QAPair, Sample, Session
from himga.eval._judge_test import SET_NAMES, answer_kind, judge_test_items
from himga.eval.judge import offline_judge_responder
from himga.llm import ChatMessage, FakeLLMServer
from tests.cli_support import run_cli

#: A judge reply every built-in judge parses as its best verdict: LoCoMo's JSON label,
#: BEAM's rubric score 1.0 and LongMemEval's single "yes".
ALWAYS_CORRECT = '{"label": "CORRECT", "score": 1.0} yes'


def always_correct(messages: list[ChatMessage]) -> str:
    return ALWAYS_CORRECT


def _judge_test(
    server: FakeLLMServer, tmp_path: Path, *extra: str, name: str = "out.json"
) -> tuple[int, dict[str, object], str]:
    out = tmp_path / name
    code, stderr = run_cli(
        [
            "judge-test",
            "--judge-llm",
            "openai",
            "--judge-model",
            "judge",
            "--judge-base-url",
            server.openai_base_url,
            "--n",
            "6",
            "--no-progress",
            "--json",
            str(out),
            *extra,
        ]
    )
    return code, json.loads(out.read_text("utf-8")), stderr


def _rates(result: dict[str, object]) -> dict[str, float]:
    sets = result["sets"]
    assert isinstance(sets, list)
    return {s["name"]: s["rate"] for s in sets}


DATASETS = [
    pytest.param(["--dataset", "locomo"], id="locomo"),
    pytest.param(["--dataset", "longmemeval_oracle"], id="longmemeval"),
    pytest.param(None, id="beam"),
]


@pytest.fixture(params=DATASETS)
def dataset_args(request: pytest.FixtureRequest, data_dir: Path, shared_tier: Path) -> list[str]:
    """The options naming each benchmark's shared copy (BEAM's 100K tier by path)."""
    args: list[str] | None = request.param
    return args if args is not None else ["--dataset", "beam-100k", "--data-path", str(shared_tier)]


def test_an_always_correct_judge_fails(
    dataset_args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    with FakeLLMServer(responder=always_correct) as server:
        code, result, _ = _judge_test(server, tmp_path, *dataset_args)
    assert code == 1
    assert result["passed"] is False
    rates = _rates(result)
    assert rates == dict.fromkeys(SET_NAMES, 1.0)


def test_a_judge_that_compares_with_the_gold_passes_and_a_rerun_asks_nothing(
    dataset_args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    cache = ["--llm-cache", str(tmp_path / "judge.sqlite")]
    # The offline judge: CORRECT exactly when the answer holds every word of the gold.
    with FakeLLMServer(responder=offline_judge_responder) as server:
        code, result, stderr = _judge_test(server, tmp_path, *dataset_args, *cache)
        asked = len(server.requests)
        again, repeated, _ = _judge_test(server, tmp_path, *dataset_args, *cache, name="2.json")
        assert len(server.requests) == asked
    assert code == 0, stderr
    assert again == 0
    assert repeated == result
    rates = _rates(result)
    assert rates["vague"] == rates["specific-wrong"] == rates["abstention"] == 0.0
    judge = result["judge"]
    assert isinstance(judge, dict)
    assert judge["model"] == "judge"
    assert judge["prompt_hashes"]
    assert asked > 0


def test_the_threshold_decides(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    with FakeLLMServer(responder=always_correct) as server:
        code, result, _ = _judge_test(server, tmp_path, "--max-false-accept", "1")
    assert code == 0
    assert result["passed"] is True


def test_an_unparseable_verdict_is_an_error_not_an_acceptance(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    with FakeLLMServer(responder=lambda messages: "maybe") as server:
        code, result, _ = _judge_test(server, tmp_path)
    sets = result["sets"]
    assert isinstance(sets, list)
    assert all(s["judged"] == 0 and s["errors"] == s["items"] - s["unavailable"] for s in sets)
    # No verdict on a wrong set is no pass.
    assert code == 1


@pytest.mark.parametrize(
    "argv",
    [["--n", "0"], ["--max-false-accept", "1.5"], ["--judge-base-url", "ftp://x"]],
)
def test_bad_options_are_refused_in_one_line(argv: list[str]) -> None:
    code, stderr = run_cli(["judge-test", "--judge-llm", "openai", *argv])
    assert code == 2
    assert stderr.count("\n") == 1
    assert "himga judge-test:" in stderr


# --- the generators -------------------------------------------------------------------

_ANSWERS = st.one_of(
    st.sampled_from(["7 May 2023", "June 2023", "2022", "last week", "Sunday"]),
    st.sampled_from(["4 years", "three", "12", "$185", "twice"]),
    st.sampled_from(["Sweden", "Caroline", "West County", "Blue Horizon Studios"]),
    st.text(st.sampled_from("abcdefgh XYZ019,."), min_size=1, max_size=30),
)


@st.composite
def samples(draw: st.DrawFn) -> list[Sample]:
    made = []
    for s in range(draw(st.integers(1, 3))):
        answers = draw(st.lists(_ANSWERS, min_size=1, max_size=6))
        qas = [
            QAPair(
                question_id=f"s{s}:q{i}",
                question=draw(
                    st.sampled_from(["When did she paint?", "What did he buy at the fair?"])
                )
                + f" ({i})",
                answer=answer,
                category="single-hop",
                adversarial=draw(st.booleans()) and i > 0,
            )
            for i, answer in enumerate(answers)
        ]
        turns = [Message("Ann", draw(st.text(st.sampled_from("ab 0123"), max_size=20)), "D1:1")]
        made.append(
            Sample(
                f"s{s}",
                "locomo",
                [Session("S1", turns, date_str="1:56 pm on 8 May, 2023")],
                qas,
                speakers=("Ann", "Bob"),
            )
        )
    return made


@given(samples(), st.integers(0, 2**32), st.integers(1, 8))
def test_the_sets_are_deterministic_per_seed(drawn: list[Sample], seed: int, n: int) -> None:
    first, eligible = judge_test_items(drawn, n=n, seed=seed)
    second, _ = judge_test_items(drawn, n=n, seed=seed)
    assert [(i.set, i.qa.question_id, i.answer) for i in first] == [
        (i.set, i.qa.question_id, i.answer) for i in second
    ]
    assert eligible == sum(
        1
        for s in drawn
        for qa in s.qa_pairs
        if not qa.adversarial and any(c.isalnum() for c in qa.answer)
    )
    assert len(first) == len(SET_NAMES) * min(n, eligible)
    assert not any(i.qa.adversarial for i in first)


@given(samples(), st.integers(0, 2**32))
def test_no_wrong_answer_gives_the_gold_away(drawn: list[Sample], seed: int) -> None:
    items, _ = judge_test_items(drawn, n=8, seed=seed)
    for item in items:
        if item.answer is None:
            continue
        gold = item.qa.answer
        if item.set == "padded-correct":
            assert gold.strip().rstrip(".") in item.answer
            continue
        if item.set == "exact":
            assert item.answer == gold.strip()
            continue
        assert item.answer != gold
        assert covered(gold, item.answer) < 1.0
        if item.set == "specific-wrong":
            # Of the gold's kind, and not a part of it either.
            assert answer_kind(item.answer) == answer_kind(gold)
            assert covered(item.answer, gold) < 1.0


def test_specific_wrong_takes_another_answer_of_the_conversation() -> None:
    qas = [
        QAPair("c:q1", "When did Ann move?", "7 May 2023", "temporal"),
        QAPair("c:q2", "When did Bob paint?", "June 2022", "temporal"),
        QAPair("c:q3", "How many cats?", "3", "single-hop"),
    ]
    sample = Sample("c", "locomo", [Session("S1", [Message("Ann", "I have 5 dogs")])], qas)
    items, _ = judge_test_items([sample], n=3, seed=random.Random(0).randrange(100))
    wrong = {i.qa.question_id: i.answer for i in items if i.set == "specific-wrong"}
    assert wrong == {"c:q1": "June 2022", "c:q2": "7 May 2023", "c:q3": "5"}


@pytest.mark.parametrize(
    "category",
    [
        "single-session-preference",
        "instruction_following",
        "preference_following",
        "event_ordering",
    ],
)
def test_a_gold_that_describes_the_reply_takes_no_part(category: str) -> None:
    qa = QAPair("c:q1", "What should I use?", "Response should suggest a tool", category)
    sample = Sample("c", "beam-100k", [Session("S1", [Message("user", "hi")])], [qa])
    assert judge_test_items([sample], n=5, seed=0) == ([], 0)


def test_the_strict_prompt_is_tested_when_asked_and_an_unknown_one_refused(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    with FakeLLMServer(responder=always_correct) as server:
        _, official, _ = _judge_test(server, tmp_path)
        _, strict, _ = _judge_test(server, tmp_path, "--judge-prompt", "strict", name="s.json")
        prompts = {r.body["messages"][-1]["content"][:60] for r in server.requests}
        unknown = ["--judge-prompt", "lenient", "--no-progress"]
        code, stderr = run_cli(
            [
                "judge-test",
                "--judge-llm",
                "openai",
                "--judge-base-url",
                server.openai_base_url,
                *unknown,
            ]
        )
    judges = official["judge"], strict["judge"]
    assert isinstance(judges[0], dict)
    assert isinstance(judges[1], dict)
    assert (judges[0]["prompt"], judges[1]["prompt"]) == ("official", "strict")
    assert judges[0]["prompt_hashes"] != judges[1]["prompt_hashes"]
    assert len(prompts) >= 2  # the two prompts asked differently
    assert code == 2
    assert "lenient" in stderr


def always_wrong(messages: list[ChatMessage]) -> str:
    return '{"label": "WRONG", "score": 0.0} no'


def test_a_judge_that_rejects_everything_fails_on_the_gold_itself(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    with FakeLLMServer(responder=always_wrong) as server:
        code, result, stderr = _judge_test(server, tmp_path)
    # every wrong set at 0%: only the rule on the gold itself can fail this judge
    assert _rates(result) == dict.fromkeys(SET_NAMES, 0.0)
    assert code == 1, stderr
    assert result["passed"] is False
    assert result["max_false_reject"] == 0.1

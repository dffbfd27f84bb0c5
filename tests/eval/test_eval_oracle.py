"""The oracle arm (``--arm oracle``): each question's context is its gold evidence turns,
in conversation order, the memory is never asked, and the arm is in the run identity and
the manifest, so an oracle run can be neither resumed as nor taken for a memory's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.data.schema import Message, QAPair, Sample, Session
from himga.eval import EvalOptions, oracle_context, run_eval
from himga.memory import NullMemory
from himga.runs import Manifest, ManifestError
from tests.cli_support import QUICK, offline_cli, run_cli
from tests.data_fixtures import read_run


def _sample(turns: int) -> Sample:
    sessions = [
        Session(
            session_id=f"s{k}",
            date_str=f"day {k}",
            messages=[
                Message(role=f"p{n % 2}", content=f"turn {k}.{n}", turn_id=f"D{k}:{n}")
                for n in range(1, turns + 1)
            ],
        )
        for k in (1, 2)
    ]
    return Sample(sample_id="c", sessions=sessions, qa_pairs=(), dataset="locomo")


@given(st.lists(st.sampled_from(["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3", "D9:9"])))
def test_the_context_is_the_evidence_turns_in_conversation_order(evidence: list[str]) -> None:
    qa = QAPair("q", "?", "a", "single-hop", evidence_turns=tuple(evidence))
    expected = [
        f"[day {k}] p{n % 2}: turn {k}.{n}"
        for k in (1, 2)
        for n in (1, 2, 3)
        if f"D{k}:{n}" in evidence  # D9:9 names no turn: nothing to show
    ]
    assert oracle_context(_sample(3), qa) == "\n".join(expected)


class NeverAsked(NullMemory):
    """A memory the oracle arm must not ask: retrieving fails the question."""

    def retrieve(self, query: str) -> str:
        raise AssertionError("the oracle arm asked the memory")


def test_the_memory_is_never_asked_and_nothing_is_ranked() -> None:
    from himga.agent import BaseAgent

    sample = _sample(2)
    qas = (
        QAPair("q1", "?", "a", "single-hop", evidence_turns=("D2:1", "D1:2")),
        QAPair("q2", "?", "a", "single-hop"),
    )
    sample = Sample(sample_id="c", sessions=sample.sessions, qa_pairs=qas, dataset="locomo")
    results = run_eval(
        [sample],
        agent=BaseAgent(NeverAsked()),
        options=EvalOptions(show_progress=False, arm="oracle"),
    )
    assert [r.memory_error for r in results] == [None, None]
    assert [r.context for r in results] == ["[day 1] p0: turn 1.2\n[day 2] p1: turn 2.1", ""]
    assert [r.ranked_turn_ids for r in results] == [None, None]


def test_an_unknown_arm_is_refused() -> None:
    with pytest.raises(ValueError, match="arm must be one of memory, oracle"):
        EvalOptions(arm="gold")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_an_oracle_run_through_the_cli(tmp_path: Path) -> None:
    with offline_cli(tmp_path):
        out = tmp_path / "oracle"
        code, err = run_cli(
            [
                "eval",
                "--arm",
                "oracle",
                "--no-preflight",
                "--no-progress",
                "--llm",
                "openai",
                "--model",
                "fake",
                "--out",
                str(out),
            ]
        )
        assert code == 0, err
        results, _, manifest = read_run(out)
        assert manifest["arm"] == "oracle"
        assert manifest["memory"]["spec"] == "null"
        assert Manifest.from_dict(manifest).arm == "oracle"
        by_question = {r["question"]: r["context"] for r in results}
        assert by_question["What did Melanie paint?"] == (
            "[1:56 pm on 8 May, 2023] Melanie: That sounds great! I painted a sunset over the "
            "lake last week."
        )
        assert all(r["prediction"] is not None for r in results)

        # The arm is in the run identity: the oracle run does not resume as a memory run.
        code, err = run_cli(
            [
                "eval",
                "--memory",
                "null",
                "--no-preflight",
                "--no-progress",
                "--llm",
                "openai",
                "--model",
                "fake",
                "--out",
                str(out),
                "--resume",
            ]
        )
        assert code == 2
        assert "arm" in err

        memory_run = tmp_path / "memory"
        assert run_cli(["eval", *QUICK, "--out", str(memory_run)])[0] == 0
        assert read_run(memory_run)[2]["arm"] == "memory"


def test_the_oracle_arm_with_a_memory_is_a_usage_error(tmp_path: Path) -> None:
    with offline_cli(tmp_path):
        code, err = run_cli(
            ["eval", "--arm", "oracle", "--memory", "bm25", "--out", str(tmp_path / "run")]
        )
    assert code == 2
    assert "--arm oracle answers from each question's gold evidence turns" in err
    assert not (tmp_path / "run").exists()


def test_a_manifest_from_before_arms_is_a_memory_run(tmp_path: Path) -> None:
    with offline_cli(tmp_path):
        assert run_cli(["eval", *QUICK, "--out", str(tmp_path / "run")])[0] == 0
    recorded = read_run(tmp_path / "run")[2]
    del recorded["arm"]
    assert Manifest.from_dict(recorded).arm == "memory"
    with pytest.raises(ManifestError, match=r"manifest\.arm: expected one of memory, oracle"):
        Manifest.from_dict({**recorded, "arm": "gold"})

"""A fixed question subset (``--questions FILE``): only those questions run, samples left
without one are not ingested, the id set is in the run identity and the manifest, and a
bad file is one line naming file, line and id."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from himga._cli import main
from himga.data.schema import Message, Session
from himga.memory import KeywordMemory
from tests.data_fixtures import read_run, write_json
from tests.integration_support import LOCOMO


class CountingMemory(KeywordMemory):
    """A keyword memory that counts the samples it is reset for (one reset a sample)."""

    resets: ClassVar[int] = 0
    ingested: ClassVar[int] = 0

    def reset(self) -> None:
        type(self).resets += 1
        super().reset()

    def ingest(self, message: Message, session: Session) -> None:
        type(self).ingested += 1
        super().ingest(message, session)


def _eval(data: Path, out: Path, questions: Path, *extra: str) -> list[str]:
    return [
        "eval",
        *("--dataset", "locomo", "--data-path", str(data), "--out", str(out)),
        *("--questions", str(questions), "--no-progress", "--no-preflight", *extra),
    ]


@pytest.mark.slow
def test_only_the_listed_questions_run_and_other_samples_are_not_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    questions = tmp_path / "q.txt"
    questions.write_text("# two of conv-b's questions\n\nconv-b:q2\n  conv-b:q1  \n", "utf-8")
    monkeypatch.setattr(CountingMemory, "resets", 0)
    monkeypatch.setattr(CountingMemory, "ingested", 0)
    out = tmp_path / "run"
    memory = ("--memory", "tests.eval.test_eval_questions:CountingMemory")
    assert main(_eval(data, out, questions, *memory)) == 0
    results, _, manifest = read_run(out)
    assert [(r["sample_id"], r["question_id"]) for r in results] == [
        ("conv-b", "conv-b:q1"),
        ("conv-b", "conv-b:q2"),
    ]
    assert CountingMemory.resets == 1  # conv-a has no listed question: never ingested
    conv_b_turns = sum(
        len(turns) for key, turns in LOCOMO[1]["conversation"].items() if key[-1].isdigit()
    )
    assert CountingMemory.ingested == conv_b_turns
    assert manifest["dataset"]["questions"] == 2
    assert manifest["dataset"]["samples"] == 1
    assert manifest["questions"]["file"] == str(questions)
    assert manifest["questions"]["ids"] == 2
    assert main(["report", str(out)]) == 0
    assert f"Only the 2 questions of `{questions}`" in (out / "report.md").read_text("utf-8")

    # The id set, not the file, is the identity: reordered with other comments, it resumes.
    questions.write_text("conv-b:q1\n# reordered\nconv-b:q2\n", "utf-8")
    assert main([*_eval(data, out, questions, *memory), "--resume"]) == 0
    assert "resumed 2 of 2" in capsys.readouterr().out
    # Another set is another run.
    other = tmp_path / "other.txt"
    other.write_text("conv-b:q1\n", "utf-8")
    assert main([*_eval(data, out, other, *memory), "--resume"]) == 2
    error = capsys.readouterr().err
    assert "differs in questions: " in error
    assert error.count("\n") == 1
    # Without a subset the run is another one too.
    whole = _eval(data, out, other, *memory)
    whole = whole[: whole.index("--questions")] + whole[whole.index("--questions") + 2 :]
    assert main([*whole, "--resume"]) == 2
    assert "differs in questions: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "conv-a:q1\n\n# fine\nconv-x:q9\n",
            "q.txt:4: unknown question id 'conv-x:q9': not in locomo",
        ),
        ("conv-a:q1 conv-a:q2\n", "q.txt:1: expected one question id a line"),
        ("conv-a:q1\nconv-a:q1\n", "q.txt:2: question id 'conv-a:q1' repeats line 1"),
        ("# nothing\n\n", "q.txt: names no question id"),
        (b"\xff\xfe", "q.txt: not UTF-8 text"),
    ],
)
def test_a_bad_question_file_is_one_line_naming_file_and_line(
    text: str | bytes, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    questions = tmp_path / "q.txt"
    if isinstance(text, bytes):
        questions.write_bytes(text)
    else:
        questions.write_text(text, "utf-8")
    assert main(_eval(data, tmp_path / "run", questions)) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"himga eval: error: {tmp_path}/{problem}")
    assert error.count("\n") == 1
    assert not (tmp_path / "run" / "checkpoint.jsonl").exists()


def test_a_missing_question_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    assert main(_eval(data, tmp_path / "run", tmp_path / "nope.txt")) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"himga eval: error: {tmp_path}/nope.txt: cannot read it: ")
    assert error.count("\n") == 1

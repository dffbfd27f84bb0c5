"""BEAM files as the official tiers really come (issue 34): a field the official
scripts never read may be missing, and what cannot be read unambiguously is refused
in one line naming file, conversation and field."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from himga._cli import main
from himga.benchmarks import get_benchmark, load_dataset
from himga.benchmarks.beam import iter_beam
from himga.data import DatasetError, MissingEvidenceWarning, MissingIdWarning
from tests.benchmarks.test_beam_load import _chat, _questions, _write


def test_a_question_without_source_chat_ids_loads_without_evidence_said_once(
    tmp_path: Path,
) -> None:
    tier = tmp_path / "chats" / "500K"
    for number in (1, 2):
        questions = _questions()
        questions["knowledge_update"] = [
            {"question": "Budget now?", "answer": "5k", "rubric": ["5k"]},
        ]
        del questions["information_extraction"][0]["source_chat_ids"]
        _write(tier, number, _chat(), questions)
    with pytest.warns(MissingEvidenceWarning) as caught:
        samples = load_dataset("beam-500k", path=tier)
    assert len(caught) == 1
    assert "4 questions carry no evidence ids" in str(caught[0].message)
    details = caught[0].message.details  # type: ignore[union-attr]
    assert any("sample 2: field 'knowledge_update[0].source_chat_ids'" in d for d in details)
    update = next(q for q in samples[0].qa_pairs if q.category == "knowledge_update")
    assert (update.evidence, update.evidence_turns, update.answer) == ((), (), "5k")
    assert sum(len(s.qa_pairs) for s in samples) == 10  # nothing dropped


def test_a_question_type_given_twice_is_refused_not_half_dropped(tmp_path: Path) -> None:
    folder = _write(tmp_path, 3, _chat(), {})
    text = json.dumps(_questions())[:-1]
    twice = json.dumps({"information_extraction": [{"question": "q", "answer": "a"}]})
    (folder / "probing_questions" / "probing_questions.json").write_text(f"{text}, {twice[1:]}")
    with pytest.raises(DatasetError) as caught:
        list(iter_beam(tmp_path, "beam-100k"))
    assert (caught.value.sample, caught.value.field) == ("3", "information_extraction")
    assert "given twice" in caught.value.problem


@pytest.mark.parametrize("answer", [42, ["March 29"], {"text": "March 29"}, True])
def test_an_answer_that_is_not_a_string_is_refused_not_replaced(
    tmp_path: Path, answer: object
) -> None:
    questions = _questions()
    question = questions["information_extraction"][0]
    question["answer"] = answer
    question["ideal_response"] = "another field"
    _write(tmp_path, 3, _chat(), questions)
    with pytest.raises(DatasetError) as caught:
        list(iter_beam(tmp_path, "beam-100k"))
    assert caught.value.field == "information_extraction[0].answer"
    assert "expected str" in caught.value.problem


def test_a_folder_named_by_a_non_ascii_digit_is_not_a_conversation(tmp_path: Path) -> None:
    _write(tmp_path, 1, _chat(), _questions())
    (tmp_path / "²").mkdir()
    (tmp_path / "²" / "chat.json").write_text("[]")
    assert [s.sample_id for s in iter_beam(tmp_path, "beam-100k")] == ["1"]
    assert get_benchmark("beam-100k").locate(tmp_path) == tmp_path


def test_datasets_with_a_path_that_does_not_exist_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nonexistent"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["datasets", "beam-100k", "--path", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"himga datasets: {missing} does not exist (given as the path of 'beam-100k')"]


def test_a_turn_index_that_is_a_non_ascii_digit_counts_no_turn() -> None:
    # The sibling of the '²' folder: str.isdigit() accepts it, int() does not.
    from himga.benchmarks.longmemeval._retrieval import _turns_named

    assert _turns_named(["s1:²", "s1:2"], ["s1:0"], {"s1"}) == 3


def test_batches_and_messages_without_ids_are_numbered_by_position_said_once(
    tmp_path: Path,
) -> None:
    # The official scripts number batches and messages by position and never read
    # batch_number or a message's id; a source_chat_ids entry can still name the others.
    chat = _chat()
    del chat[1]["batch_number"]
    del chat[1]["turns"][0][1]["id"]  # "Noted": id 5, named by no question
    _write(tmp_path, 1, chat, _questions())
    with pytest.warns(MissingIdWarning) as caught:
        (sample,) = load_dataset("beam-100k", path=tmp_path)
    assert len(caught) == 1
    assert "2 batches or messages have no id" in str(caught[0].message)
    details = caught[0].message.details  # type: ignore[union-attr]
    assert "field '[1].batch_number': missing; numbered 2 by its position" in details[0]
    assert "field '[1].turns[0][1].id': missing; turn id 'batch-2/turns[0][1]'" in details[1]
    assert [s.session_id for s in sample.sessions] == ["batch-1", "batch-2"]
    assert [m.turn_id for m in sample.sessions[1].messages] == ["4", "batch-2/turns[0][1]"]
    assert len(sample.qa_pairs) == 4

"""The BEAM loader: small conversations in tmp_path, malformed ones, the shared 100K tier."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.beam import (
    QUESTION_TYPES,
    BeamBenchmark,
    flatten_source_ids,
    iter_beam,
    strip_marker,
)
from himga.data import DatasetError


def _message(role: str, mid: int, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "id": mid, "content": content, **extra}


def _chat() -> list[dict[str, Any]]:
    return [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    _message(
                        "user",
                        0,
                        "Plan my sprint ->-> 1,1",
                        time_anchor="March-15-2024",
                        index="1,1",
                        question_type="main_question",
                    ),
                    _message("assistant", 1, "Sure."),
                ],
                [_message("user", 2, "It ends March 29 ->-> 1,2"), _message("assistant", 3, "Ok.")],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [
                [
                    _message("user", 4, "Budget is 5k ->-> 2,N/A", time_anchor="April-05-2024"),
                    _message("assistant", 5, "Noted ->-> 2,1)"),
                ]
            ],
        },
    ]


def _questions() -> dict[str, Any]:
    return {
        "abstention": [
            {"question": "Who is Bob?", "ideal_response": "Not said.", "rubric": ["Not said"]}
        ],
        "contradiction_resolution": [
            {
                "question": "Did I say X?",
                "ideal_answer": "You said both.",
                "source_chat_ids": {"first_statement": [2], "second_statement": [4]},
                "rubric": ["notes the contradiction"],
            }
        ],
        "event_ordering": [
            {
                "question": "Order?",
                "answer": "sprint, budget",
                "source_chat_ids": [0, [2, 2], 4],
                "rubric": ["Sprint", "Budget"],
            }
        ],
        "information_extraction": [
            {
                "question": "When does my sprint end?",
                "answer": "March 29",
                "difficulty": "easy",
                "source_chat_ids": [2],
                "rubric": ["LLM response should state: March 29"],
            }
        ],
    }


def _write(tier: Path, number: int, chat: Any, questions: Any, *, truncated: Any = None) -> Path:
    folder = tier / str(number)
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat))
    if truncated is not None:
        (folder / "chat_trunecated.json").write_text(json.dumps(truncated))
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions))
    return folder


def test_a_conversation_becomes_one_sample(tmp_path: Path) -> None:
    _write(tmp_path, 1, _chat(), _questions())
    (sample,) = iter_beam(tmp_path, "beam-100k")
    assert sample.sample_id == "1"
    assert sample.dataset == "beam-100k"
    assert [s.session_id for s in sample.sessions] == ["batch-1", "batch-2"]
    first, second = sample.sessions
    assert first.date_str == "March-15-2024"
    assert first.date is not None
    assert first.date.isoformat() == "2024-03-15T00:00:00"
    assert second.date_str == "April-05-2024"
    assert [m.turn_id for _, m in sample.iter_turns()] == ["0", "1", "2", "3", "4", "5"]
    assert [m.content for _, m in sample.iter_turns()] == [
        "Plan my sprint",
        "Sure.",
        "It ends March 29",
        "Ok.",
        "Budget is 5k",
        "Noted",
    ]
    assert sample.metadata["history_file"] == "chat.json"
    assert sample.metadata["turn_extras"]["0"] == {
        "time_anchor": "March-15-2024",
        "index": "1,1",
        "question_type": "main_question",
    }
    by_type = {qa.category: qa for qa in sample.qa_pairs}
    assert list(by_type) == [
        "abstention",
        "contradiction_resolution",
        "event_ordering",
        "information_extraction",
    ]
    abstention = by_type["abstention"]
    assert abstention.adversarial
    assert abstention.evidence_turns == ()
    assert abstention.answer == "Not said."
    assert by_type["contradiction_resolution"].evidence_turns == ("2", "4")
    assert by_type["contradiction_resolution"].answer == "You said both."
    # Nested, repeated ids: flattened in order, each once.
    assert by_type["event_ordering"].evidence_turns == ("0", "2", "4")
    assert by_type["event_ordering"].gold == {"rubric": ["Sprint", "Budget"]}
    extraction = by_type["information_extraction"]
    assert extraction.question_id == "1:information_extraction[0]"
    assert extraction.evidence == extraction.evidence_turns == ("2",)
    assert not extraction.adversarial
    assert sample.metadata["questions"][extraction.question_id] == {
        "difficulty": "easy",
        "source_chat_ids": [2],
    }


def test_markers_can_be_kept(tmp_path: Path) -> None:
    _write(tmp_path, 1, _chat(), _questions())
    (sample,) = iter_beam(tmp_path, "beam-100k", keep_markers=True)
    contents = [m.content for _, m in sample.iter_turns()]
    assert contents[0] == "Plan my sprint ->-> 1,1"
    assert contents[5] == "Noted ->-> 2,1)"


@pytest.mark.parametrize(
    ("raw", "stripped"),
    [
        ("Help me ->-> 1,1", "Help me"),
        ("Help me ->->  3,12", "Help me"),
        ("Help me ->-> 2,N/A", "Help me"),
        ("Help me ->-> 5,14)", "Help me"),
        ("a ->-> b in the middle", "a ->-> b in the middle"),
        ("no marker", "no marker"),
    ],
)
def test_strip_marker(raw: str, stripped: str) -> None:
    assert strip_marker(raw) == stripped


def test_the_truncated_chat_is_read_where_the_repository_has_one(tmp_path: Path) -> None:
    chat = _chat()
    _write(tmp_path, 1, chat, _questions(), truncated=[*chat[:1], copy.deepcopy(chat[1])])
    truncated = json.loads((tmp_path / "1" / "chat_trunecated.json").read_text())
    truncated[1]["turns"][0][1]["content"] = "cut"
    (tmp_path / "1" / "chat_trunecated.json").write_text(json.dumps(truncated))
    (official,) = iter_beam(tmp_path, "beam-100k")
    (full,) = iter_beam(tmp_path, "beam-100k", truncated=False)
    assert official.metadata["history_file"] == "chat_trunecated.json"
    assert official.sessions[1].messages[1].content == "cut"
    assert full.metadata["history_file"] == "chat.json"
    assert full.sessions[1].messages[1].content == "Noted"


def test_the_10m_plan_layout(tmp_path: Path) -> None:
    batch_1, batch_2 = _chat()
    batch_2["batch_number"] = 1  # numbering restarts in each plan
    _write(tmp_path, 1, [{"plan-1": [batch_1]}, {"plan-2": [batch_2]}], _questions())
    (sample,) = iter_beam(tmp_path, "beam-10m")
    assert [s.session_id for s in sample.sessions] == ["plan-1/batch-1", "plan-2/batch-1"]
    assert len(sample.qa_pairs) == 4


def test_conversations_come_in_numeric_order_and_wanted_ones_only(tmp_path: Path) -> None:
    for number in (10, 2, 1):
        _write(tmp_path, number, _chat(), _questions())
    (tmp_path / "notes").mkdir()
    (tmp_path / "3").mkdir()  # no chat.json: an error once reached, never read when not wanted
    samples = iter_beam(tmp_path, "beam-100k")
    assert [next(samples).sample_id for _ in range(2)] == ["1", "2"]
    with pytest.raises(DatasetError, match="missing"):
        next(samples)
    wanted = [s.sample_id for s in iter_beam(tmp_path, "beam-100k", frozenset({"10", "1"}))]
    assert wanted == ["1", "10"]


@given(
    st.recursive(
        st.integers(0, 50),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_flattening_keeps_every_leaf_in_order(raw: Any) -> None:
    def leaves(value: Any) -> list[Any]:
        if isinstance(value, list):
            return [leaf for item in value for leaf in leaves(item)]
        if isinstance(value, dict):
            return [leaf for item in value.values() for leaf in leaves(item)]
        return [value]

    flat = list(flatten_source_ids(raw))
    assert [leaf for _, leaf in flat] == leaves(raw)
    assert len({path for path, _ in flat}) == len(flat)


# -- malformed files: one clear error naming file, conversation and field ----------------


def _error(tmp_path: Path) -> DatasetError:
    with pytest.raises(DatasetError) as caught:
        list(iter_beam(tmp_path, "beam-100k"))
    return caught.value


def test_truncated_chat_json(tmp_path: Path) -> None:
    folder = _write(tmp_path, 7, _chat(), _questions())
    text = (folder / "chat.json").read_text()
    (folder / "chat.json").write_text(text[: len(text) // 2])
    error = _error(tmp_path)
    assert error.file == str(folder / "chat.json")
    assert error.sample == "7"
    assert error.field is not None
    assert error.field.startswith("[")
    assert "truncated" in str(error)


def test_truncated_questions_json(tmp_path: Path) -> None:
    folder = _write(tmp_path, 7, _chat(), _questions())
    questions = folder / "probing_questions" / "probing_questions.json"
    questions.write_text(questions.read_text()[:-40])
    error = _error(tmp_path)
    assert error.file == str(questions)
    assert error.sample == "7"
    assert "truncated" in str(error)


def test_an_unresolvable_source_id(tmp_path: Path) -> None:
    questions = _questions()
    questions["contradiction_resolution"][0]["source_chat_ids"]["second_statement"] = [4, 99]
    folder = _write(tmp_path, 7, _chat(), questions)
    error = _error(tmp_path)
    assert error.file == str(folder / "probing_questions" / "probing_questions.json")
    assert error.sample == "7"
    assert error.field == "contradiction_resolution[0].source_chat_ids.second_statement[1]"
    assert "99 is not in chat.json" in str(error)
    assert "Did I say X?" in str(error)


def test_a_question_without_a_rubric(tmp_path: Path) -> None:
    questions = _questions()
    del questions["information_extraction"][0]["rubric"]
    _write(tmp_path, 7, _chat(), questions)
    error = _error(tmp_path)
    assert (error.sample, error.field, error.problem) == (
        "7",
        "information_extraction[0].rubric",
        "missing",
    )


def test_an_empty_rubric(tmp_path: Path) -> None:
    questions = _questions()
    questions["event_ordering"][0]["rubric"] = []
    _write(tmp_path, 7, _chat(), questions)
    assert _error(tmp_path).field == "event_ordering[0].rubric"


def test_an_empty_batch(tmp_path: Path) -> None:
    chat = _chat()
    chat[1]["turns"] = [[]]
    folder = _write(tmp_path, 7, chat, _questions())
    error = _error(tmp_path)
    assert error.file == str(folder / "chat.json")
    assert (error.sample, error.field) == ("7", "[1].turns")
    assert "empty batch" in str(error)


def test_an_unknown_question_type(tmp_path: Path) -> None:
    questions = _questions()
    questions["trivia"] = []
    _write(tmp_path, 7, _chat(), questions)
    error = _error(tmp_path)
    assert error.field == "trivia"
    assert "unknown question type" in str(error)


def test_a_repeated_message_id(tmp_path: Path) -> None:
    chat = _chat()
    chat[1]["turns"][0][1]["id"] = 3
    _write(tmp_path, 7, chat, _questions())
    error = _error(tmp_path)
    assert error.field == "[1].turns[0][1].id"
    assert "appears twice" in str(error)


def test_a_missing_chat(tmp_path: Path) -> None:
    folder = _write(tmp_path, 7, _chat(), _questions())
    (folder / "chat.json").unlink()
    error = _error(tmp_path)
    assert error.file == str(folder / "chat.json")
    assert "missing" in str(error)


# -- where a copy is found -----------------------------------------------------------------


def test_locate_accepts_a_checkout_a_tier_folder_or_a_data_dir(tmp_path: Path) -> None:
    tier = tmp_path / "repo" / "chats" / "100K"
    _write(tier, 1, _chat(), _questions())
    beam = BeamBenchmark("100K")
    assert beam.locate(tmp_path / "repo") == tier
    assert beam.locate(tier) == tier
    data_dir = tmp_path / "data"
    (data_dir / "beam").mkdir(parents=True)
    (data_dir / "beam" / "chats").symlink_to(tier.parent)
    assert beam.locate(data_dir) == data_dir / "beam" / "chats" / "100K"
    # Another tier's folder is not this tier.
    assert BeamBenchmark("500K").locate(tier) is None
    assert BeamBenchmark("500K").locate(tmp_path / "repo") is None
    assert beam.locate(tmp_path / "empty") is None


def test_load_wants_a_folder(tmp_path: Path) -> None:
    beam = BeamBenchmark("100K")
    with pytest.raises(DatasetError, match="is a folder"):
        beam.load(tmp_path / "x.json", None)
    with pytest.raises(DatasetError, match="no conversation folder"):
        beam.load(tmp_path, None)


# -- the shared tier ----------------------------------------------------------------------


def test_the_shared_100k_conversations(shared_tier: Path) -> None:
    samples = list(BeamBenchmark("100K").load(shared_tier, None))
    assert [s.sample_id for s in samples] == [str(n) for n in range(1, 11)]
    questions = [qa for s in samples for qa in s.qa_pairs]
    assert len(questions) == 200
    assert Counter(qa.category for qa in questions) == {t: 20 for t in QUESTION_TYPES}
    for sample in samples:
        turn_ids = {m.turn_id for _, m in sample.iter_turns()}
        for qa in sample.qa_pairs:
            assert set(qa.evidence_turns) <= turn_ids
            assert bool(qa.evidence_turns) != (qa.category == "abstention") or (
                qa.question_id == "9:preference_following[1]"  # its source_chat_ids is []
            )
            assert qa.gold["rubric"]
        for session in sample.sessions:
            assert session.date is not None
        assert not any("->->" in m.content[-20:] for _, m in sample.iter_turns())
    # The answer script's file: chat_trunecated.json for 5, 7 and 10 (10 loses a batch).
    files = {s.sample_id: s.metadata["history_file"] for s in samples}
    assert [n for n, f in files.items() if f == "chat_trunecated.json"] == ["5", "7", "10"]
    assert [len(s.sessions) for s in samples] == [3, 3, 3, 3, 3, 5, 5, 5, 5, 4]

"""LongMemEval: the official layout, gold labels kept off messages, streaming."""

from __future__ import annotations

import json
import random
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks import iter_dataset, load_dataset
from himga.benchmarks.longmemeval.synthetic import longmemeval_record, write_longmemeval
from himga.data import (
    Category,
    DatasetError,
    DuplicateSessionWarning,
    EvidenceWarning,
    MissingEvidenceWarning,
    UnknownCategoryWarning,
    _stream,
)
from himga.data._stream import iter_json_array
from tests.data_fixtures import longmemeval_records, write_json


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lme") / "longmemeval_s.json"
    write_longmemeval(path, questions=32, sessions=4, turns=3, turn_chars=80)
    return path


def test_generated_file_loads(generated: Path) -> None:
    raw = json.loads(generated.read_text(encoding="utf-8"))
    samples = load_dataset("longmemeval_s", path=generated)
    assert [s.sample_id for s in samples] == [r["question_id"] for r in raw]
    for sample, record in zip(samples, raw, strict=True):
        (qa,) = sample.qa_pairs
        assert sample.dataset == "longmemeval_s"
        assert qa.question_id == sample.sample_id == record["question_id"]
        assert qa.answer == str(record["answer"])
        assert qa.category == record["question_type"]
        assert qa.adversarial == record["question_id"].endswith("_abs")
        assert qa.evidence == tuple(record["answer_session_ids"])
        assert sample.question_date == record["question_date"]
        assert [s.session_id for s in sample.sessions] == record["haystack_session_ids"]
        assert [s.date_str for s in sample.sessions] == record["haystack_dates"]
        flagged = [
            f"{sid}:{i}"
            for sid, turns in zip(
                record["haystack_session_ids"], record["haystack_sessions"], strict=True
            )
            for i, turn in enumerate(turns)
            if turn.get("has_answer")
        ]
        assert list(qa.evidence_turns) == flagged
        assert flagged
        for session, turns in zip(sample.sessions, record["haystack_sessions"], strict=True):
            assert [(m.role, m.content) for m in session.messages] == [
                (t["role"], t["content"]) for t in turns
            ]
    assert any(qa.adversarial for s in samples for qa in s.qa_pairs)
    assert any(isinstance(r["answer"], int) for r in raw)


def test_dates_are_parsed(generated: Path) -> None:
    (sample,) = load_dataset("longmemeval_s", path=generated, limit=1)
    record = json.loads(generated.read_text(encoding="utf-8"))[0]
    expected = datetime.strptime(record["haystack_dates"][0], "%Y/%m/%d (%a) %H:%M")
    assert sample.sessions[0].date == expected


def test_iter_equals_load_and_limit_ids(generated: Path) -> None:
    everything = load_dataset("longmemeval_s", path=generated)
    assert list(iter_dataset("longmemeval_s", path=generated)) == everything
    assert load_dataset("longmemeval_s", path=generated, limit=5) == everything[:5]
    assert load_dataset("longmemeval_s", path=generated, limit=0) == []
    wanted = [everything[9].sample_id, everything[3].sample_id]
    assert load_dataset("longmemeval_s", path=generated, ids=wanted) == [
        everything[3],
        everything[9],
    ]
    with pytest.raises(DatasetError, match="no sample with id nope"):
        load_dataset("longmemeval_s", path=generated, ids=["nope"])
    with pytest.raises(TypeError):
        load_dataset("longmemeval_s", path=generated, ids="q00001")


def test_ids_skip_records_with_unhashable_ids(tmp_path: Path) -> None:
    good = longmemeval_record(random.Random(1), 1, sessions=1, turns=1, turn_chars=10)
    bad = good | {"question_id": ["not", "a", "str"]}
    path = write_json(tmp_path / "x.json", [bad, good])
    assert [s.sample_id for s in load_dataset("longmemeval_s", path=path, ids=["q00001"])] == [
        "q00001"
    ]
    with pytest.raises(DatasetError, match="sample #0: field 'question_id'"):
        load_dataset("longmemeval_s", path=path)


def test_has_answer_never_reaches_a_message(generated: Path) -> None:
    for sample in iter_dataset("longmemeval_s", path=generated):
        for _, message in sample.iter_turns():
            assert not hasattr(message, "has_answer")
            assert "has_answer" not in message.content


def test_unknown_question_type_is_kept_and_warned(tmp_path: Path) -> None:
    record = longmemeval_record(random.Random(1), 1, sessions=2, turns=2, turn_chars=10)
    record["question_type"] = "multi-hop-reasoning"
    path = write_json(tmp_path / "x.json", [record])
    with pytest.warns(UnknownCategoryWarning, match=r"x\.json: 1 questions have an unknown") as w:
        (sample,) = load_dataset("longmemeval_s", path=path)
    [detail] = w[0].message.details  # type: ignore[union-attr]
    assert re.search(r"x\.json: sample 'q00001'.*multi-hop-reasoning", detail)
    assert sample.qa_pairs[0].category == Category.UNKNOWN
    assert sample.metadata["question_type"] == "multi-hop-reasoning"


def test_answer_session_outside_haystack_is_warned(tmp_path: Path) -> None:
    record = longmemeval_record(random.Random(1), 1, sessions=2, turns=2, turn_chars=10)
    record["answer_session_ids"].append("missing")
    path = write_json(tmp_path / "x.json", [record])
    with pytest.warns(EvidenceWarning, match="1 evidence ids name no turn or session") as w:
        (sample,) = load_dataset("longmemeval_s", path=path)
    [detail] = w[0].message.details  # type: ignore[union-attr]
    assert "'missing'" in detail
    assert "missing" in sample.qa_pairs[0].evidence


def test_a_record_without_answer_session_ids_loads_said_once(tmp_path: Path) -> None:
    # The official scripts find answer sessions by their ids and never read the field.
    records = [
        longmemeval_record(random.Random(n), n, sessions=2, turns=2, turn_chars=10)
        for n in (1, 2, 3)
    ]
    for record in records[1:]:
        del record["answer_session_ids"]
    path = write_json(tmp_path / "x.json", records)
    with pytest.warns(MissingEvidenceWarning, match="2 questions carry no evidence ids") as w:
        samples = load_dataset("longmemeval_s", path=path)
    assert len(w) == 1
    details = w[0].message.details  # type: ignore[union-attr]
    assert "sample 'q00002': field 'answer_session_ids': missing" in details[0]
    assert [len(s.qa_pairs) for s in samples] == [1, 1, 1]
    qa = samples[1].qa_pairs[0]
    assert qa.evidence == ()
    assert qa.evidence_turns == tuple(  # the turn-level gold stays
        f"{session_id}:{index}"
        for session_id, turns in zip(
            records[1]["haystack_session_ids"], records[1]["haystack_sessions"], strict=True
        )
        for index, turn in enumerate(turns)
        if turn.get("has_answer") is True
    )


def test_extra_fields_are_kept_aside(tmp_path: Path) -> None:
    record = longmemeval_record(random.Random(1), 1, sessions=1, turns=1, turn_chars=10)
    record["haystack_sessions"][0][0]["tool"] = "x"
    record["note"] = 1
    (sample,) = load_dataset("longmemeval_s", path=write_json(tmp_path / "x.json", [record]))
    turn = sample.sessions[0].messages[0].turn_id
    assert sample.metadata["turn_extras"] == {turn: {"tool": "x"}}
    assert sample.metadata["note"] == 1


def test_repeated_session_is_kept_under_a_new_id(tmp_path: Path) -> None:
    # As in 13 haystacks of the cleaned LongMemEval_S: a filler session twice, other date.
    record = longmemeval_record(random.Random(1), 1, sessions=3, turns=2, turn_chars=10)
    filler = record["haystack_session_ids"][0]
    record["haystack_session_ids"][2] = filler
    record["haystack_sessions"][2] = record["haystack_sessions"][0]
    record["answer_session_ids"] = [record["haystack_session_ids"][1]]
    path = write_json(tmp_path / "x.json", [record])
    with pytest.warns(DuplicateSessionWarning, match="1 sessions repeat a session id") as w:
        (sample,) = load_dataset("longmemeval_s", path=path)
    [detail] = w[0].message.details  # type: ignore[union-attr]
    assert "haystack_session_ids[2]" in detail
    assert [s.session_id for s in sample.sessions] == [
        filler,
        record["haystack_session_ids"][1],
        f"{filler}#2",
    ]
    assert sample.sessions[2].messages[1].turn_id == f"{filler}#2:1"
    assert sample.sessions[2].date_str == record["haystack_dates"][2]
    turn_ids = [m.turn_id for _, m in sample.iter_turns()]
    assert len(set(turn_ids)) == len(turn_ids)


def test_renamed_session_colliding_with_a_real_id_is_an_error(tmp_path: Path) -> None:
    record = longmemeval_record(random.Random(1), 1, sessions=3, turns=1, turn_chars=10)
    record["haystack_session_ids"] = ["a", "a#2", "a"]
    record["answer_session_ids"] = []
    path = write_json(tmp_path / "x.json", [record])
    with (
        pytest.warns(DuplicateSessionWarning),
        pytest.raises(DatasetError, match="field 'haystack_session_ids': session ids collide"),
    ):
        load_dataset("longmemeval_s", path=path)


def test_duplicate_question_id_is_an_error(tmp_path: Path) -> None:
    record = longmemeval_record(random.Random(1), 1, sessions=1, turns=1, turn_chars=10)
    path = write_json(tmp_path / "x.json", [record, record])
    with pytest.raises(DatasetError, match=r"x\.json: sample 'q00001': field 'question_id'"):
        load_dataset("longmemeval_s", path=path)


@given(st.lists(longmemeval_records(), max_size=3))
def test_generated_records_round_trip(records: list[dict[str, Any]]) -> None:
    for index, record in enumerate(records):
        record["question_id"] = f"{index}-{record['question_id']}"
    with tempfile.TemporaryDirectory() as tmp:
        path = write_json(Path(tmp) / "x.json", records)
        samples = load_dataset("longmemeval_oracle", path=path)
    assert len(samples) == len(records)
    for sample, record in zip(samples, records, strict=True):
        (qa,) = sample.qa_pairs
        assert qa.answer == str(record["answer"])
        assert qa.evidence == tuple(record["answer_session_ids"])
        messages = [(m.role, m.content) for _, m in sample.iter_turns()]
        assert messages == [
            (t["role"], t["content"]) for turns in record["haystack_sessions"] for t in turns
        ]
        assert list(qa.evidence_turns) == [
            f"{session_id}:{index}"
            for session_id, turns in zip(
                record["haystack_session_ids"], record["haystack_sessions"], strict=True
            )
            for index, turn in enumerate(turns)
            if turn.get("has_answer") is True
        ]
        assert {m.turn_id for _, m in sample.iter_turns()} >= set(qa.evidence_turns)
        assert (qa.question, qa.category) == (record["question"], record["question_type"])
        assert qa.adversarial == record["question_id"].endswith("_abs")
        assert sample.question_date == record["question_date"]
        assert [s.date_str for s in sample.sessions] == record["haystack_dates"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.lists(json_values, max_size=6), st.integers(1, 9), st.sampled_from(["", " ", "\n  "]))
def test_stream_matches_json_loads(values: list[Any], chunk: int, space: str) -> None:
    text = json.dumps(values, ensure_ascii=False, separators=("," + space, ":" + space))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.json"
        path.write_text(space + text + space, encoding="utf-8")
        original = _stream._CHUNK_CHARS
        _stream._CHUNK_CHARS = chunk  # tiny chunks: every element straddles reads
        try:
            streamed = [value for _, value in iter_json_array(path)]
        finally:
            _stream._CHUNK_CHARS = original
    assert streamed == json.loads(text)


@given(st.lists(json_values, min_size=1, max_size=5), st.data())
def test_stream_rejects_truncation(values: list[Any], data: st.DataObject) -> None:
    text = json.dumps(values)
    cut = data.draw(st.integers(1, len(text) - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.json"
        path.write_text(text[:cut], encoding="utf-8")
        with pytest.raises(DatasetError, match=r"a\.json"):
            list(iter_json_array(path))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "expected a JSON array"),
        ('{"a": 1}', "expected a JSON array"),
        ("[1 2]", "sample #0: expected ',' or ']'"),
        ("[1]]", "unexpected data after the array"),
        ('[{"a":}]', "sample #0: invalid JSON"),
        ("[1,]", "sample #1: invalid JSON"),
        ('[{"a": "b', "sample #0: file ends inside the element"),
    ],
)
def test_stream_errors(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "a.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match=problem):
        list(iter_json_array(path))


def test_stream_rejects_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'["\xff"]')
    with pytest.raises(DatasetError, match="not UTF-8"):
        list(iter_json_array(path))


def test_large_elements_are_not_reparsed_quadratically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    class CountingDecoder(json.JSONDecoder):
        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            calls.append(len(s) - idx)
            return super().raw_decode(s, idx)

    monkeypatch.setattr(json, "JSONDecoder", CountingDecoder)  # what _stream instantiates
    monkeypatch.setattr(_stream, "_CHUNK_CHARS", 16)
    element = {"text": "x" * 200_000}
    path = tmp_path / "big.json"
    path.write_text(json.dumps([element] * 3), encoding="utf-8")
    assert [value for _, value in iter_json_array(path)] == [element] * 3
    # The first element doubles the buffer from 16 characters (~14 attempts); the
    # next ones are buffered whole beforehand. Re-parsing one element char by
    # char, or chunk by chunk, would take thousands of attempts.
    assert len(calls) <= 20
    assert sum(calls) <= 8 * 3 * 200_000

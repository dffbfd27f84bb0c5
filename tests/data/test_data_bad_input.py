"""Malformed input raises DatasetError naming the file, the sample id and the field."""

from __future__ import annotations

import copy
import json
import pickle
import random
import re
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks import load_dataset
from himga.benchmarks.longmemeval.synthetic import longmemeval_record
from himga.data import ChecksumMismatchError, DatasetError
from tests.data_fixtures import locomo_samples, longmemeval_records, write_json

Path_ = tuple[str | int, ...]


def _locomo() -> dict[str, Any]:
    return {
        "sample_id": "conv-9",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
        },
        "qa": [{"question": "q?", "answer": "a", "evidence": ["D1:1"], "category": 1}],
    }


def _lme() -> dict[str, Any]:
    record = longmemeval_record(random.Random(0), 9, sessions=2, turns=2, turn_chars=10)
    record["question_id"] = "q-9"
    return record


def _delete(path: Path_) -> Callable[[Any], None]:
    def mutate(raw: Any) -> None:
        del _parent(raw, path)[path[-1]]

    return mutate


def _set(path: Path_, value: Any) -> Callable[[Any], None]:
    def mutate(raw: Any) -> None:
        _parent(raw, path)[path[-1]] = value

    return mutate


def _parent(raw: Any, path: Path_) -> Any:
    for key in path[:-1]:
        raw = raw[key]
    return raw


LOCOMO_CASES = [
    ("no conversation", _delete(("conversation",)), "conversation"),
    ("session not a list", _set(("conversation", "session_1"), {}), "conversation.session_1"),
    (
        "turn without text",
        _delete(("conversation", "session_1", 0, "text")),
        "conversation.session_1[0].text",
    ),
    (
        "turn not an object",
        _set(("conversation", "session_1", 0), "hi"),
        "conversation.session_1[0]",
    ),
    ("question without question", _delete(("qa", 0, "question")), "qa[0].question"),
    ("unknown category code", _set(("qa", 0, "category"), 6), "qa[0].category"),
    ("category as a string", _set(("qa", 0, "category"), "1"), "qa[0].category"),
    ("category as a bool", _set(("qa", 0, "category"), True), "qa[0].category"),
    ("answer as a float", _set(("qa", 0, "answer"), 1.5), "qa[0].answer"),
    ("evidence not a list", _set(("qa", 0, "evidence"), "D1:1"), "qa[0].evidence"),
    ("evidence entry not a str", _set(("qa", 0, "evidence"), [1]), "qa[0].evidence[0]"),
    ("no qa", _delete(("qa",)), "qa"),
    ("no speaker_b", _delete(("conversation", "speaker_b")), "conversation.speaker_b"),
    (
        "session without date",
        _delete(("conversation", "session_1_date_time")),
        "conversation.session_1_date_time",
    ),
    (
        "duplicate turn id",
        lambda raw: raw["conversation"]["session_1"].append(
            dict(raw["conversation"]["session_1"][0])
        ),
        "conversation.session_1[1].dia_id",
    ),
]

LME_CASES = [
    ("question without question", _delete(("question",)), "question"),
    ("dates shorter than sessions", lambda raw: raw["haystack_dates"].pop(), "haystack_dates"),
    (
        "ids shorter than sessions",
        lambda raw: raw["haystack_session_ids"].pop(),
        "haystack_session_ids",
    ),
    ("turn not an object", _set(("haystack_sessions", 0, 0), "hi"), "haystack_sessions[0][0]"),
    ("session not a list", _set(("haystack_sessions", 1), {}), "haystack_sessions[1]"),
    (
        "turn without content",
        _delete(("haystack_sessions", 0, 1, "content")),
        "haystack_sessions[0][1].content",
    ),
    (
        "has_answer not a bool",
        _set(("haystack_sessions", 0, 0, "has_answer"), "yes"),
        "haystack_sessions[0][0].has_answer",
    ),
    ("answer as a list", _set(("answer",), ["a"]), "answer"),
    ("no question_type", _delete(("question_type",)), "question_type"),
    ("session id not a str", _set(("haystack_session_ids", 0), 3), "haystack_session_ids[0]"),
    ("answer_session_ids a string", _set(("answer_session_ids",), "s1"), "answer_session_ids"),
]


@pytest.mark.parametrize(
    ("case", "mutate", "field"), LOCOMO_CASES, ids=[c[0] for c in LOCOMO_CASES]
)
def test_locomo_bad_input(
    tmp_path: Path, case: str, mutate: Callable[[Any], None], field: str
) -> None:
    raw = _locomo()
    mutate(raw)
    path = write_json(tmp_path / "locomo10.json", [raw])
    with pytest.raises(DatasetError) as info:
        load_dataset("locomo", path=path)
    assert str(info.value).startswith(f"{path}: sample 'conv-9': field {field!r}: ")
    assert (info.value.file, info.value.sample, info.value.field) == (str(path), "'conv-9'", field)


@pytest.mark.parametrize(("case", "mutate", "field"), LME_CASES, ids=[c[0] for c in LME_CASES])
def test_longmemeval_bad_input(
    tmp_path: Path, case: str, mutate: Callable[[Any], None], field: str
) -> None:
    raw = _lme()
    raw["haystack_sessions"][0][0]["has_answer"] = True
    mutate(raw)
    path = write_json(tmp_path / "longmemeval_s.json", [_lme() | {"question_id": "ok"}, raw])
    with pytest.raises(DatasetError) as info:
        load_dataset("longmemeval_s", path=path)
    assert str(info.value).startswith(f"{path}: sample 'q-9': field {field!r}: ")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("locomo", "[{", "invalid JSON"),
        ("locomo", '{"sample_id": "conv-1"}', "expected a list of samples"),
        ("locomo", "[3]", "sample #0: is a int, not an object"),
        ("locomo", '[{"conversation": {}}]', "sample #0: field 'sample_id'"),
        ("longmemeval_s", "[{", "sample #0: file ends inside the element"),
        ("longmemeval_s", "[3]", "sample #0: a record must be an object"),
        ("longmemeval_s", '[{"question_id": 1}]', "sample #0: field 'question_id'"),
    ],
)
def test_file_level_bad_input(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=f"^{re.escape(str(path))}: .*{re.escape(message)}"):
        load_dataset(name, path=path)


def test_bad_per_conversation_file_name(tmp_path: Path) -> None:
    write_json(tmp_path / "7.json", {"speaker_a": "A", "speaker_b": "B", "qa": []})
    write_json(tmp_path / "notes.json", {})
    with pytest.raises(DatasetError, match=r"notes\.json: a LoCoMo per-conversation file"):
        load_dataset("locomo", path=tmp_path)


def test_corrupt_zip(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.zip"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(DatasetError, match=r"locomo10\.zip"):
        load_dataset("locomo", path=path)


def test_corrupt_compressed_data_in_zip(tmp_path: Path) -> None:
    turns = [{"speaker": "A", "dia_id": f"D1:{i}", "text": f"turn {i} " * 20} for i in range(50)]
    conversation = {"speaker_a": "A", "speaker_b": "B", "session_1": turns, "qa": []}
    path = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("26.json", json.dumps(conversation))
    body = bytearray(path.read_bytes())
    body[60] ^= 0xFF  # inside the deflate stream (it starts at byte 37): zlib fails, not the CRC
    path.write_bytes(bytes(body))
    with pytest.raises(DatasetError, match=r"locomo10\.zip: corrupt zip archive"):
        load_dataset("locomo", path=path)


def _nested(depth: int = 100_000) -> str:
    """A JSON array nested deeper than Python's recursion limit (json.loads: RecursionError)."""
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("name", "layout"),
    [
        ("locomo", "locomo10.json"),
        ("locomo", "conversations/1.json"),
        ("longmemeval_s", "longmemeval_s.json"),
        ("locomo-plus", "locomo_plus.json"),
        ("beam-100k", "100K/1/chat.json"),
    ],
)
def test_deeply_nested_json_is_a_dataset_error_naming_the_file(
    tmp_path: Path, name: str, layout: str
) -> None:
    file = tmp_path / layout
    file.parent.mkdir(parents=True, exist_ok=True)
    # LongMemEval streams its records: nest one record; the others, the whole document.
    file.write_text(f"[{_nested()}]" if name.startswith("longmemeval") else _nested())
    given_path = tmp_path / layout.split("/")[0] if "/" in layout else file
    with pytest.raises(DatasetError, match=f"^{re.escape(str(file))}: .*nested too deeply"):
        load_dataset(name, path=given_path)


def test_encrypted_zip_member_is_a_dataset_error_naming_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("1.json", "[]")
    body = bytearray(path.read_bytes())
    body[6] |= 1  # the local header's "encrypted" flag ...
    body[body.find(b"PK\x01\x02") + 8] |= 1  # ... and the central directory's
    path.write_bytes(bytes(body))
    with pytest.raises(DatasetError, match=r"locomo10\.zip: unreadable zip archive: .*encrypted"):
        load_dataset("locomo", path=path)


def test_dataset_error_survives_copy_and_pickle() -> None:
    error = ChecksumMismatchError("f.zip", "bad sha256", sample="'s'", field="x")
    for clone in (copy.copy(error), pickle.loads(pickle.dumps(error))):
        assert type(clone) is ChecksumMismatchError
        assert (clone.file, clone.problem, clone.sample, clone.field) == (
            "f.zip",
            "bad sha256",
            "'s'",
            "x",
        )
        assert str(clone) == str(error)


# --- properties: any corruption of a generated valid file is rejected with DatasetError ---


def _locomo_mutations(raw: dict[str, Any]) -> list[tuple[str, Path_]]:
    """(kind, path) pairs, each of which makes ``raw`` invalid."""
    mutations: list[tuple[str, Path_]] = [
        ("delete", ("sample_id",)),
        ("retype", ("sample_id",)),
        ("delete", ("conversation",)),
        ("delete", ("qa",)),
        ("retype", ("conversation",)),
        ("retype", ("qa",)),
    ]
    conversation = raw["conversation"]
    for key in conversation:
        mutations.append(("retype", ("conversation", key)))
        if not re.fullmatch(r"session_\d+", key):
            mutations.append(("delete", ("conversation", key)))
            continue
        for index, turn in enumerate(conversation[key]):
            mutations.append(("retype", ("conversation", key, index)))
            for field in ("speaker", "dia_id", "text"):
                mutations += [("delete", ("conversation", key, index, field))]
            known = ("speaker", "dia_id", "text", "blip_caption")
            mutations += [("retype", ("conversation", key, index, f)) for f in turn if f in known]
    for index, question in enumerate(raw["qa"]):
        mutations.append(("retype", ("qa", index)))
        for field in question:
            mutations += [("retype", ("qa", index, field)), ("delete", ("qa", index, field))]
    return mutations


def _lme_mutations(raw: dict[str, Any]) -> list[tuple[str, Path_]]:
    mutations: list[tuple[str, Path_]] = []
    for field in raw:
        mutations.append(("retype", (field,)))
        if field != "answer_session_ids":  # the official scripts never read it: optional
            mutations.append(("delete", (field,)))
    for key in ("haystack_session_ids", "haystack_dates", "answer_session_ids"):
        mutations += [("retype", (key, i)) for i in range(len(raw[key]))]
    for s, turns in enumerate(raw["haystack_sessions"]):
        mutations.append(("retype", ("haystack_sessions", s)))
        for t, turn in enumerate(turns):
            mutations.append(("retype", ("haystack_sessions", s, t)))
            mutations += [("retype", ("haystack_sessions", s, t, f)) for f in turn]
            mutations += [("delete", ("haystack_sessions", s, t, f)) for f in ("role", "content")]
    return mutations


def _apply(raw: Any, kind: str, path: Path_) -> None:
    if kind == "delete":
        del _parent(raw, path)[path[-1]]
    else:
        _parent(raw, path)[path[-1]] = 2.5  # no field of either format may be a float


def _rejected(name: str, data: Any, text: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.json"
        path.write_text(json.dumps(data) if text is None else text, encoding="utf-8")
        with pytest.raises(DatasetError, match=re.escape(str(path))):
            load_dataset(name, path=path)


@given(locomo_samples(), st.data())
def test_corrupted_locomo_is_rejected(raw: dict[str, Any], data: st.DataObject) -> None:
    raw = copy.deepcopy(raw)
    kind, path = data.draw(st.sampled_from(_locomo_mutations(raw)))
    _apply(raw, kind, path)
    _rejected("locomo", [raw])


@given(st.lists(longmemeval_records(), min_size=1, max_size=2), st.data())
def test_corrupted_longmemeval_is_rejected(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    for index, record in enumerate(records):
        record["question_id"] = f"{index}-{record['question_id']}"
    target = data.draw(st.sampled_from(records))
    kind, path = data.draw(st.sampled_from(_lme_mutations(target)))
    _apply(target, kind, path)
    _rejected("longmemeval_s", records)


@given(
    st.sampled_from(["locomo", "longmemeval_s"]),
    st.one_of(locomo_samples(), longmemeval_records()),
    st.data(),
)
def test_truncated_files_are_rejected(name: str, raw: dict[str, Any], data: st.DataObject) -> None:
    text = json.dumps([raw])
    cut = data.draw(st.integers(1, len(text) - 1))
    _rejected(name, None, text[:cut])

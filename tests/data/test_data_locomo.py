"""LoCoMo: the real counts, the three layouts, image turns, answers, evidence repairs."""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
import warnings
import zipfile
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from himga.benchmarks import load_dataset
from himga.benchmarks._load import _summarised
from himga.benchmarks.locomo import code_of, normalise_evidence
from himga.data import Category, DatasetError, EvidenceWarning, Message, Sample
from tests.data_fixtures import locomo_samples, write_json


def _strip_generated(sample: Sample) -> Sample:
    """Drop the zip-only generated fields (the shared locomo10.json leaves them out)."""
    kept = {k: v for k, v in sample.metadata.items() if k not in ("observation", "session_summary")}
    return dataclasses.replace(sample, metadata=kept)


@pytest.fixture(scope="module")
def real(shared_datasets: Path) -> list[Sample]:
    with pytest.warns(EvidenceWarning):
        return load_dataset("locomo", path=shared_datasets / "locomo" / "locomo10.json")


def test_real_counts(real: list[Sample]) -> None:
    assert [s.sample_id for s in real] == [
        f"conv-{n}" for n in (26, 30, 41, 42, 43, 44, 47, 48, 49, 50)
    ]
    questions = [qa for s in real for qa in s.qa_pairs]
    assert len(questions) == 1986
    per_code = Counter(code_of(qa.category) for qa in questions)
    assert [per_code[code] for code in range(1, 6)] == [282, 321, 96, 841, 446]
    assert sum(1 for s in real for _ in s.iter_turns()) == 5882
    assert all(s.dataset == "locomo" and len(s.speakers) == 2 for s in real)
    assert all(session.date is not None for s in real for session in s.sessions)
    assert len({qa.question_id for qa in questions}) == 1986


class _ForeignWarning(UserWarning):
    """Not one of the loader's warnings."""


def test_a_foreign_warning_while_loading_is_passed_on_once() -> None:
    # Re-issuing it inside the recording context appended it to the list being
    # read, without end: the loader filled the machine's memory.
    sample: Any = object()  # the loader passes samples through untouched

    def loader() -> Generator[Any, None, None]:
        warnings.warn("not the loader's", _ForeignWarning, stacklevel=1)
        yield sample

    with pytest.warns(_ForeignWarning) as record:
        assert list(_summarised(loader(), "locomo", Path("x.json"))) == [sample]
    assert [str(w.message) for w in record] == ["not the loader's"]


def test_real_warnings_are_one_summary_naming_file_sample_and_question(
    shared_datasets: Path,
) -> None:
    with pytest.warns(EvidenceWarning) as record:
        load_dataset("locomo", path=shared_datasets / "locomo" / "locomo10.json")
    [summary] = [w for w in record if w.category is EvidenceWarning]
    assert "locomo10.json: 3 evidence ids name no turn" in str(summary.message)
    assert "`himga datasets --verbose locomo` lists them" in str(summary.message)
    assert summary.filename == __file__  # the caller's line, not the loader's
    messages = sorted(summary.message.details)  # type: ignore[union-attr]
    assert len(messages) == 3
    assert all("locomo10.json" in m for m in messages)
    assert "'conv-42'" in messages[0]
    assert "'D10:19'" in messages[0]
    assert any("'conv-47'" in m and "'D4:36'" in m for m in messages)


def test_zip_loads_equal_samples(shared_datasets: Path, real: list[Sample]) -> None:
    with pytest.warns(EvidenceWarning):
        zipped = load_dataset("locomo", path=shared_datasets / "locomo" / "locomo10.zip")
    assert [_strip_generated(s) for s in zipped] == real
    assert all("observation" in s.metadata for s in zipped)


def test_directory_of_conversations_loads_equal_samples(
    shared_datasets: Path, real: list[Sample], tmp_path: Path
) -> None:
    with zipfile.ZipFile(shared_datasets / "locomo" / "locomo10.zip") as archive:
        archive.extractall(tmp_path)
    with pytest.warns(EvidenceWarning):
        from_dir = load_dataset("locomo", path=tmp_path)
    assert [_strip_generated(s) for s in from_dir] == real


def test_directory_with_several_layouts_loads_one_copy(
    shared_datasets: Path, real: list[Sample], tmp_path: Path
) -> None:
    for name in ("locomo10.json", "locomo10.zip"):
        shutil.copy(shared_datasets / "locomo" / name, tmp_path / name)
    (tmp_path / "26.json").write_text("{}")  # ignored: locomo10.json is preferred
    with pytest.warns(EvidenceWarning):
        assert load_dataset("locomo", path=tmp_path) == real


def test_seed_example_runs_with_data_dir(
    shared_datasets: Path, monkeypatch: pytest.MonkeyPatch, real: list[Sample]
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    with pytest.warns(EvidenceWarning):
        samples = load_dataset("locomo")
    assert samples == real


def test_image_turn_content(real: list[Sample]) -> None:
    message = next(m for _, m in real[0].iter_turns() if m.turn_id == "D1:5")
    assert message.content == (
        "The transgender stories were so inspiring! I was so happy and thankful for all the "
        "support. [shares an image: a photo of a dog walking past a wall with a painting of a "
        "woman]"
    )
    extras = real[0].metadata["turn_extras"]["D1:5"]
    assert extras["img_url"] == ["https://i.redd.it/l7hozpetnhlb1.jpg"]


def test_answers(real: list[Sample]) -> None:
    questions = {qa.question_id: qa for s in real for qa in s.qa_pairs}
    assert all(isinstance(qa.answer, str) for qa in questions.values())
    assert questions["conv-26:q2"].answer == "2022"  # an int in the file
    adversarial = [qa for qa in questions.values() if qa.category == Category.ADVERSARIAL]
    assert len(adversarial) == 446
    assert all(qa.adversarial for qa in adversarial)
    assert not any(qa.adversarial for qa in questions.values() if qa not in adversarial)
    first = questions["conv-26:q" + str(1 + _first_adversarial_index(real[0]))]
    assert first.answer == "self-care is important"
    # Two category-5 questions also carry an `answer`: kept aside, not lost.
    assert real[0].metadata["qa_extras"] == {
        "conv-26:q168": {"answer": "No"},
        "conv-26:q179": {"answer": "No"},
    }


def _first_adversarial_index(sample: Sample) -> int:
    return next(i for i, qa in enumerate(sample.qa_pairs) if qa.adversarial)


def test_real_evidence_repairs(real: list[Sample]) -> None:
    questions = {qa.question_id: qa for s in real for qa in s.qa_pairs}
    by_evidence = {qa.evidence: qa for qa in questions.values()}
    assert ("D8:6", "D9:17") in by_evidence
    assert ("D9:1", "D4:4", "D4:6") in by_evidence
    malformed = questions["conv-42:q89"]
    assert "D" in malformed.evidence
    assert "D" not in malformed.evidence_turns
    turn_ids = {s.sample_id: {m.turn_id for _, m in s.iter_turns()} for s in real}
    for sample in real:
        for qa in sample.qa_pairs:
            assert set(qa.evidence_turns) <= turn_ids[sample.sample_id]
            assert set(qa.evidence_turns) <= set(qa.evidence)
    flat = {e for qa in questions.values() for e in qa.evidence}
    assert "D11:26" in flat
    assert "D30:5" in flat
    assert not {"D:11:26", "D30:05"} & flat


# Every question of locomo10.json whose evidence is not a list of distinct well-formed
# ids naming turns of its sample (found by a script over the file), with its evidence as
# read. The four empty lists are kept empty.
REAL_MALFORMED_EVIDENCE = {
    "conv-26:q31": (),
    "conv-26:q38": ("D8:6", "D9:17"),  # "D8:6; D9:17"
    "conv-26:q47": (),
    "conv-42:q59": ("D2:14", "D9:12", "D9:14", "D10:11", "D19:17", "D27:23", "D10:19"),
    "conv-42:q89": ("D1:18", "D", "D1:20"),
    "conv-43:q19": ("D1:14", "D2:7", "D4:7", "D5:15", "D11:26", "D20:21", "D26:36"),
    "conv-47:q39": ("D4:36", "D18:1", "D18:7"),
    "conv-49:q32": ("D9:1", "D4:4", "D4:6"),  # "D9:1 D4:4 D4:6"
    "conv-49:q39": ("D22:1", "D22:2", "D9:10", "D9:11"),
    "conv-49:q47": ("D21:18", "D21:22", "D11:15", "D11:19"),
    "conv-50:q6": ("D4:5", "D5:5"),  # "D4:5" listed twice
    "conv-50:q40": (),
    "conv-50:q43": (),
    "conv-50:q70": ("D30:5",),  # "D30:05"
}
REAL_DANGLING_EVIDENCE = {"conv-42:q59": "D10:19", "conv-42:q89": "D", "conv-47:q39": "D4:36"}


def test_every_malformed_real_evidence_entry(real: list[Sample]) -> None:
    questions = {qa.question_id: qa for s in real for qa in s.qa_pairs}
    for question_id, expected in REAL_MALFORMED_EVIDENCE.items():
        qa = questions[question_id]
        assert qa.evidence == expected, question_id
        dangling = REAL_DANGLING_EVIDENCE.get(question_id)
        assert qa.evidence_turns == tuple(e for e in expected if e != dangling), question_id
    well_formed = re.compile(r"D[1-9][0-9]*:[1-9][0-9]*")
    for question_id, qa in questions.items():
        if question_id not in REAL_MALFORMED_EVIDENCE:
            assert qa.evidence, question_id
            assert all(well_formed.fullmatch(e) for e in qa.evidence), question_id
            assert qa.evidence_turns == qa.evidence, question_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D:11:26"], ["D11:26"]),
        (["D30:05"], ["D30:5"]),
        (["D1:3", "D1:3,D2:1"], ["D1:3", "D2:1"]),
        (["D", ""], ["D"]),
    ],
)
def test_normalise_evidence(raw: list[str], expected: list[str]) -> None:
    assert normalise_evidence(raw) == expected


def test_no_gold_on_messages() -> None:
    assert [f.name for f in dataclasses.fields(Message)] == ["role", "content", "turn_id"]


@given(locomo_samples())
def test_generated_samples_round_trip(raw: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_json(Path(tmp) / "locomo10.json", [raw])
        (sample,) = load_dataset("locomo", path=path)
    conversation = raw["conversation"]
    turns = [t for k, v in conversation.items() if isinstance(v, list) for t in v]
    messages = [m for _, m in sample.iter_turns()]
    assert [m.turn_id for m in messages] == [t["dia_id"] for t in turns]
    for message, turn in zip(messages, turns, strict=True):
        assert message.role == turn["speaker"]
        if "blip_caption" in turn:
            assert message.content == f"{turn['text']} [shares an image: {turn['blip_caption']}]"
        else:
            assert message.content == turn["text"]
    assert sample.speakers == (conversation["speaker_a"], conversation["speaker_b"])
    assert [s.date_str for s in sample.sessions] == [
        conversation[f"{s.session_id}_date_time"] for s in sample.sessions
    ]
    for qa, question in zip(sample.qa_pairs, raw["qa"], strict=True):
        expected = question.get("adversarial_answer", question.get("answer"))
        assert qa.answer == str(expected)
        assert code_of(qa.category) == question["category"]
        # The generated ids are valid and distinct: splitting the joined entries is all
        # the repair needed (an oracle independent of normalise_evidence).
        ids = [i for entry in question["evidence"] for i in re.split(r"[;,\s]+", entry) if i]
        assert list(qa.evidence) == list(qa.evidence_turns) == ids
        assert qa.question == question["question"]
        assert qa.adversarial == (question["category"] == 5)
    assert sample.metadata["event_summary"] == raw["event_summary"]


def test_json_and_repository_layout_agree(tmp_path: Path) -> None:
    sample: dict[str, Any] = {
        "sample_id": "conv-7",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
        },
        "qa": [{"question": "q?", "answer": "a", "evidence": ["D1:1"], "category": 4}],
        "event_summary": {"events_session_1": {"A": [], "date": "8 May, 2023"}},
    }
    single = load_dataset("locomo", path=write_json(tmp_path / "locomo10.json", [sample]))
    repository = {
        **sample["conversation"],
        "qa": sample["qa"],
        "events_session_1": sample["event_summary"]["events_session_1"],
    }
    (tmp_path / "conv").mkdir()
    write_json(tmp_path / "conv" / "7.json", repository)
    assert load_dataset("locomo", path=tmp_path / "conv") == single


def test_duplicate_sample_id_is_an_error(tmp_path: Path) -> None:
    raw = {"sample_id": "conv-1", "conversation": {"speaker_a": "A", "speaker_b": "B"}, "qa": []}
    path = write_json(tmp_path / "locomo10.json", [raw, raw])
    with pytest.raises(DatasetError, match=r"locomo10\.json: sample 'conv-1': field 'sample_id'"):
        load_dataset("locomo", path=path)


def test_duplicate_conversation_in_directory_is_an_error(tmp_path: Path) -> None:
    conversation = {"speaker_a": "A", "speaker_b": "B", "qa": []}
    write_json(tmp_path / "7.json", conversation)
    (tmp_path / "sub").mkdir()
    write_json(tmp_path / "sub" / "007.json", conversation)
    with pytest.raises(DatasetError, match="duplicate sample id"):
        load_dataset("locomo", path=tmp_path)

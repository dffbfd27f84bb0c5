"""A key given twice in one JSON object is refused by every loader that reads a whole
file (``json`` would silently keep the last value): one ``DatasetError`` naming the
file and the key, never the first value dropped (issue 34 item 22, its siblings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from himga.benchmarks import load_dataset
from himga.data import DatasetError
from tests.benchmarks.test_benchmarks_locomo_plus import _GOOD, _write_upstream_layout
from tests.data.test_data_bad_input import _locomo


def _twice(text: str, key: str, value: object) -> str:
    """``text`` (a JSON object's text) with ``key`` given again, first, as ``value``."""
    at = text.index(f'"{key}"')
    return f"{text[:at]}{json.dumps(key)}: {json.dumps(value)}, {text[at:]}"


def test_a_locomo_question_giving_its_answer_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(_twice(json.dumps([_locomo()]), "answer", "the other answer"), "utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset("locomo", path=path)
    assert (caught.value.file, caught.value.field) == (str(path), "answer")
    assert "given twice" in caught.value.problem


def test_a_locomo_plus_item_giving_its_time_gap_twice_is_refused(tmp_path: Path) -> None:
    path = _write_upstream_layout(tmp_path, [_GOOD])
    path.write_text(_twice(path.read_text("utf-8"), "time_gap", "a year later"), "utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset("locomo-plus", path=path)
    assert (caught.value.file, caught.value.field) == (str(path), "time_gap")

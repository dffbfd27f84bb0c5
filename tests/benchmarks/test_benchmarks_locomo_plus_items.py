"""LoCoMo-Plus: the time-gap parser and the item file's validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga import HimgaError
from himga.benchmarks import load_dataset
from himga.benchmarks.locomo_plus import TimeGapError, parse_time_gap, read_items
from himga.data import DatasetError, Sample, UnknownCategoryWarning
from tests.benchmarks.test_benchmarks_locomo_plus import _write_upstream_layout
from tests.data_fixtures import write_json

# Hand-worked: count x days per unit (week 7, month 30, year 365, as upstream).
GAPS = [
    ("two weeks later", 2 * 7),
    ("one week later", 7),
    ("about six weeks later", 6 * 7),
    ("around one week after the birth", 7),
    ("two months after the challenge ended", 2 * 30),
    ("roughly three months later", 3 * 30),
    ("a month later", 30),
    ("a year after", 365),
    ("about one year later", 365),
    ("Nine Months Later", 9 * 30),
    ("12 weeks later", 12 * 7),
    ("an year later", 365),
    # upstream reads these as 0 days; the vague counts (couple 2, few 3, several 3):
    ("several months later", 3 * 30),
    ("several weeks later", 3 * 7),
    ("several years later", 3 * 365),
    ("a couple of months later", 2 * 30),
    ("a few weeks later", 3 * 7),
    # days, which upstream does not read
    ("3 days later", 3),
    ("a day later", 1),
]


@pytest.mark.parametrize(("text", "days"), GAPS)
def test_time_gap_hand_worked(text: str, days: int) -> None:
    assert parse_time_gap(text) == days


@pytest.mark.parametrize(
    "text", ["later", "", "soon after", "an hour later", "eighteen months later", "2weeks"]
)
def test_unreadable_time_gap_is_an_error_not_zero_days(text: str) -> None:
    with pytest.raises(TimeGapError, match="cannot read") as caught:
        parse_time_gap(text)
    assert isinstance(caught.value, HimgaError)
    assert isinstance(caught.value, ValueError)


_WORDS = (
    *("one", "two", "three", "four", "five", "six"),
    *("seven", "eight", "nine", "ten", "eleven", "twelve"),
)


@given(
    st.sampled_from(["", "about ", "around ", "roughly "]),
    st.integers(1, 12),
    st.booleans(),
    st.sampled_from([("week", 7), ("month", 30), ("year", 365), ("day", 1)]),
    st.sampled_from([" later", " after the move", ""]),
)
def test_time_gap_is_count_times_unit(
    prefix: str, count: int, as_word: bool, unit: tuple[str, int], suffix: str
) -> None:
    name, days = unit
    number = _WORDS[count - 1] if as_word else str(count)
    plural = "s" if count > 1 else ""
    assert parse_time_gap(f"{prefix}{number} {name}{plural}{suffix}") == count * days


def _item(**changes: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "relation_type": "causal",
        "cue_dialogue": "A: I finally learned to say no.\nB: Good for you.",
        "trigger_query": "A: I volunteered again and I'm swamped.",
        "time_gap": "two weeks later",
        "model_name": "gpt-4o-mini",
    }
    item.update(changes)
    return {k: v for k, v in item.items() if v is not None}


def test_items_are_read_in_order_with_extras(tmp_path: Path) -> None:
    path = write_json(tmp_path / "locomo_plus.json", [_item(), _item(time_gap="a year after")])
    first, second = read_items(path)
    assert (first.index, second.index) == (0, 1)
    assert [(t.speaker, t.text) for t in first.cue] == [
        ("A", "I finally learned to say no."),
        ("B", "Good for you."),
    ]
    assert (first.gap_days, second.gap_days) == (14, 365)
    assert dict(first.extras) == {"model_name": "gpt-4o-mini"}


def _error(tmp_path: Path, data: Any, raw: str | None = None) -> DatasetError:
    path = tmp_path / "locomo_plus.json"
    if raw is None:
        write_json(path, data)
    else:
        path.write_text(raw, encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        read_items(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, HimgaError)
    return caught.value


def test_truncated_json_names_the_file(tmp_path: Path) -> None:
    text = json.dumps([_item(), _item()])
    error = _error(tmp_path, None, raw=text[: len(text) // 2])
    assert "invalid JSON" in str(error)


@pytest.mark.parametrize("field", ["cue_dialogue", "trigger_query", "time_gap"])
def test_missing_field_names_item_and_field(tmp_path: Path, field: str) -> None:
    error = _error(tmp_path, [_item(), _item(), _item(**{field: None})])
    assert error.sample == "plus-002 (item #2)"
    assert error.field == field
    assert "missing" in str(error)
    assert f"sample plus-002 (item #2): field {field!r}: missing" in str(error)


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        ({"time_gap": "a while later"}, "time_gap", "cannot read 'a while later'"),
        ({"time_gap": 14}, "time_gap", "expected str, found a int"),
        ({"relation_type": 3}, "relation_type", "expected str, found a int"),
        ({"cue_dialogue": "A: hi\nC: who?"}, "cue_dialogue", "line 2 is not 'A: ...'"),
        ({"cue_dialogue": "A:   \nB: x"}, "cue_dialogue", "line 1 has a speaker but no text"),
        ({"trigger_query": "\n  \n"}, "trigger_query", "no 'A: ...' or 'B: ...' line"),
    ],
)
def test_bad_field_names_item_and_field(
    tmp_path: Path, changes: dict[str, Any], field: str, problem: str
) -> None:
    error = _error(tmp_path, [_item(**changes)])
    assert (error.sample, error.field) == ("plus-000 (item #0)", field)
    assert problem in str(error)


def test_a_missing_or_unknown_relation_type_is_kept_as_unknown_said_once(
    tmp_path: Path,
) -> None:
    # Upstream's scripts never read relation_type: an item without one is still an item.
    items = [_item(), _item(relation_type=None), _item(relation_type="mood")]
    path = write_json(tmp_path / "locomo_plus.json", items)
    with pytest.warns(UnknownCategoryWarning) as caught:
        categories = [s.qa_pairs[0].category for s in _stitched(path)]
    assert categories == ["causal", "unknown", "unknown"]
    assert len(caught) == 1
    assert "2 questions have an unknown or missing category" in str(caught[0].message)
    details = caught[0].message.details  # type: ignore[union-attr]
    assert "sample plus-001 (item #1): field 'relation_type': missing" in details[0]
    assert "unknown relation type 'mood'" in details[1]


def _stitched(path: Path) -> list[Sample]:
    """The items of ``path`` stitched into a two-conversation host written beside it."""
    items = json.loads(path.read_text("utf-8"))
    return load_dataset("locomo-plus", path=_write_upstream_layout(path.parent, items))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"items": []}, "expected a list of items, found a dict"),
        ([[1]], "is a list, not an object"),
    ],
)
def test_wrong_shapes(tmp_path: Path, data: Any, problem: str) -> None:
    assert problem in str(_error(tmp_path, data))

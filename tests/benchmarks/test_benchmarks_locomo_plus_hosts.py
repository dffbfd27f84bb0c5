"""LoCoMo-Plus finds its LoCoMo host by name, never by searching below a directory, and a
``time_gap`` no calendar can hold is a one-line error (issue 34 items 13, 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from himga.benchmarks import load_dataset
from himga.benchmarks.locomo import LOCOMO
from himga.benchmarks.locomo_plus import FILE
from himga.data import DatasetError
from tests.benchmarks.test_benchmarks_locomo_plus import _GOOD, _write_upstream_layout
from tests.data_fixtures import write_json


def test_a_stray_numbered_json_beside_the_file_is_not_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "datasets"
    for directory in ("locomo", "locomo_plus/runs"):
        (home / directory).mkdir(parents=True)
    _write_upstream_layout(home / "locomo", [_GOOD])  # the host, as a datasets directory has it
    (home / "locomo" / FILE).unlink()
    plus = write_json(home / "locomo_plus" / FILE, [_GOOD])
    write_json(home / "locomo_plus" / "runs" / "3.json", {"not": "a conversation"})
    write_json(home / "locomo_plus" / "7.json", {"not": "a conversation"})
    monkeypatch.delenv("HIMGA_DATA_DIR", raising=False)
    (sample,) = load_dataset("locomo-plus", path=plus)
    assert sample.metadata["host"] == "conv-1"


def test_locating_locomo_searches_no_deeper_than_its_known_layouts(tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    write_json(tmp_path / "a" / "b" / "c" / "7.json", {})
    assert LOCOMO.locate(tmp_path) is None
    extracted = tmp_path / "x" / "data" / "multimodal_dialog" / "locomo10_v2"
    extracted.mkdir(parents=True)
    write_json(extracted / "26.json", {})
    assert LOCOMO.locate(tmp_path / "x") == extracted


@pytest.mark.parametrize(
    "gap",
    ["3000 years later", "999999999 years later", "1" * 5000 + " days later"],
)
def test_a_gap_no_calendar_holds_is_a_dataset_error_naming_the_item(
    tmp_path: Path, gap: str
) -> None:
    path = _write_upstream_layout(tmp_path, [_GOOD, {**_GOOD, "time_gap": gap}])
    with pytest.raises(DatasetError) as caught:
        load_dataset("locomo-plus", path=path)
    assert (caught.value.file, caught.value.sample, caught.value.field) == (
        str(path),
        "plus-001 (item #1)",
        "time_gap",
    )
    assert "\n" not in str(caught.value)

"""Arms named from a manifest, the memory / reader split, the published claims file and
the judge interval column of the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.eval import compute_metrics, format_table
from himga.eval._intervals import wilson_interval
from himga.runs import (
    Manifest,
    ManifestError,
    PublishedError,
    arm_of,
    arm_split,
    format_arm_split,
    load_published,
)
from himga.runs._published import PUBLISHED_FILE
from tests.eval.test_eval_support import make_result

_MANIFEST: dict[str, Any] = {
    "format": 1,
    "himga_version": "0",
    "arguments": {},
    "started_at": "",
    "finished_at": "",
    "wall_time_s": 1.0,
    "dataset": {
        "name": "locomo",
        "path": "x",
        "sha256": "0",
        "limit": None,
        "samples": 1,
        "questions": 1,
    },
    "memory": {
        "spec": "bm25",
        "target": "t",
        "arguments": {},
        "class": "c",
        "repr": None,
        "distribution": None,
        "version": None,
        "source_sha256": "0",
        "source_files": 1,
        "timeout_s": None,
    },
    "preflight": None,
    "run_identity": "0",
    "shard": None,
    "resumed": 0,
    "llm": None,
    "prompt_hashes": {},
    "judge": None,
    "tokens": {},
    "counts": {},
    "python": "",
    "platform": "",
    "results_sha256": None,
}


def _manifest(spec: str, **extra: Any) -> Manifest:
    return Manifest.from_dict(
        {**_MANIFEST, "memory": {**_MANIFEST["memory"], "spec": spec}, **extra}
    )


@pytest.mark.parametrize(
    ("spec", "extra", "arm"),
    [
        ("bm25", {}, "memory"),  # an older manifest: no "arm"
        ("bm25", {"arm": "memory"}, "memory"),
        ("full", {}, "full"),
        ("null", {"arm": "memory"}, "llm-only"),
        ("bm25", {"arm": "oracle"}, "oracle"),
        ("full", {"arm": "oracle"}, "oracle"),
    ],
)
def test_a_runs_arm_comes_from_its_manifest(spec: str, extra: dict[str, Any], arm: str) -> None:
    manifest = _manifest(spec, **extra)
    assert arm_of(manifest) == arm
    assert Manifest.from_dict(manifest.to_dict()) == manifest


def test_a_malformed_arm_is_refused_naming_the_field() -> None:
    with pytest.raises(ManifestError, match=r"manifest\.arm"):
        _manifest("bm25", arm=3)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_the_share_places_the_memory_between_the_floor_and_the_ceiling(
    floor: float, ceiling: float, accuracy: float
) -> None:
    split = arm_split(
        [("null", "llm-only", floor), ("oracle", "oracle", ceiling), ("m", "memory", accuracy)]
    )
    memory = split["runs"][2]
    assert memory["over_floor"] == accuracy - floor
    assert memory["to_ceiling"] == ceiling - accuracy
    assert split["reader_gap"] == 1 - ceiling
    if ceiling > floor:
        assert floor + memory["share"] * (ceiling - floor) == pytest.approx(accuracy, abs=1e-9)
    else:  # no gain from the gold evidence to share out
        assert memory["share"] is None


def test_without_a_floor_or_a_ceiling_the_split_says_what_to_add() -> None:
    split = arm_split([("m", "memory", 0.4), ("full", "full", 0.5)])
    assert (split["floor"], split["ceiling"], split["runs"][0]["share"]) == (None, None, None)
    text = "\n".join(format_arm_split(split, metric="judge", group="overall", n=10))
    assert "add an LLM-only run (`--memory null`) and an oracle run (`--arm oracle`)" in text
    assert "| full | full context | 0.500 |" in text


def test_the_shipped_claims_validate_and_cite_their_source() -> None:
    claims = load_published()
    assert claims
    for claim in claims:
        assert claim.url.startswith("https://")
        assert claim.source
        assert claim.where
        assert 0 <= claim.score_percent <= 100


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / PUBLISHED_FILE
    path.write_text(json.dumps(data), "utf-8")
    return path


_GOOD: dict[str, Any] = {
    "system": "S",
    "benchmark": "locomo",
    "metric": "J",
    "score_percent": 50,
    "reader": None,
    "judge": None,
    "judge_prompt": None,
    "k": None,
    "categories": "all",
    "source": "a paper",
    "url": "https://example.org",
    "where": "Table 1",
}


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({k: v for k, v in _GOOD.items() if k != "url"}, r"claims\[0\]: no field 'url'"),
        ({**_GOOD, "score_percent": "50"}, r"claims\[0\]\.score_percent: wrong type"),
        ({**_GOOD, "score_percent": 150}, r"claims\[0\]\.score_percent: not in \[0, 100\]"),
        ({**_GOOD, "k": True}, r"claims\[0\]\.k: wrong type"),
        ({**_GOOD, "k": 0}, r"claims\[0\]\.k: must be >= 1"),
        ({**_GOOD, "system": " "}, r"claims\[0\]\.system: empty"),
        ({**_GOOD, "scores": 1}, r"claims\[0\]: unknown field 'scores'"),
        ("S 50", r"claims\[0\]: expected an object"),
    ],
)
def test_a_malformed_claim_is_refused_in_one_line(
    tmp_path: Path, claim: object, message: str
) -> None:
    path = _write(tmp_path, {"claims": [claim]})
    with pytest.raises(PublishedError, match=message) as caught:
        load_published(path)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_a_claims_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PublishedError, match='"claims" list'):
        load_published(_write(tmp_path, [_GOOD]))
    broken = tmp_path / "broken.json"
    broken.write_text("{", "utf-8")
    with pytest.raises(PublishedError, match="cannot be read"):
        load_published(broken)
    assert load_published(_write(tmp_path, {"claims": [_GOOD]}))[0].score_percent == 50.0


def test_the_table_shows_the_judge_interval_beside_the_judge() -> None:
    results = [make_result(question_id=str(i), prediction="Rome") for i in range(5)]
    table = format_table(compute_metrics(results, [1.0, 1.0, 0.0, 1.0, 0.0]), dataset="locomo")
    header, _, *rows = table.splitlines()
    titles = header.split()
    assert titles[titles.index("judge") + 1] == "judge-95%"
    expected = wilson_interval(3, 5)
    assert f"0.600  [{expected.low:.3f}, {expected.high:.3f}]" in rows[-1]


def test_partial_credit_gets_no_interval_column() -> None:
    results = [make_result(question_id=str(i), prediction="Rome") for i in range(2)]
    table = format_table(compute_metrics(results, [1.0, 0.5]), dataset="locomo")
    assert "judge-95%" not in table
    assert "0.750" in table

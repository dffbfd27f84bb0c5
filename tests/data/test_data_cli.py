"""``himga datasets``: where each dataset resolves and its statistics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from himga._cli import main
from himga.benchmarks.longmemeval.synthetic import write_longmemeval


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HIMGA_DATA_DIR", raising=False)


def test_lists_real_locomo_stats(
    shared_datasets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert (
        f"resolves to {shared_datasets / 'locomo' / 'locomo10.json'} (from HIMGA_DATA_DIR)" in out
    )
    assert "samples 10 | sessions 272 | turns 5,882 | questions 1,986" in out
    assert (
        "questions per category: multi-hop 282, temporal 321, open-domain 96, single-hop 841, "
        "adversarial 446" in out
    )
    (locomo,) = (b for b in re.split(r"\n(?=\S)", out) if b.startswith("locomo: "))
    assert locomo.count("warning: ") == 1  # one summary line for LoCoMo's three quirks
    assert "warning: " + str(shared_datasets / "locomo" / "locomo10.json") + ": 3 evidence" in out
    assert "'conv-47:q39'" not in out
    assert main(["datasets", "locomo", "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert "'conv-47:q39': evidence id 'D4:36' names no turn" in verbose
    assert "longmemeval_m: " in out
    assert "not found: " in out


def test_explicit_path_and_no_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lme.json"
    write_longmemeval(path, questions=12, sessions=2, turns=2, turn_chars=40)
    assert main(["datasets", "longmemeval_s", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert "samples 12 | sessions 24 | turns 48 | questions 12" in out
    assert "single-session-user 2" in out
    assert main(["datasets", "longmemeval_s", "--path", str(path), "--no-stats"]) == 0
    assert "samples" not in capsys.readouterr().out


def test_malformed_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text("[{", encoding="utf-8")
    assert main(["datasets", "longmemeval_s", "--path", str(path)]) == 1
    assert f"malformed: {path}" in capsys.readouterr().out
    assert main(["datasets", "nope"]) == 2
    assert "unknown dataset(s) nope" in capsys.readouterr().err
    assert main(["datasets", "--path", str(path)]) == 2
    assert "--data-path needs exactly one NAME" in capsys.readouterr().err


def test_datasets_takes_evals_option_name_and_its_old_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One name for the data path on ``eval`` and ``datasets`` (``--path`` kept a release)."""
    path = tmp_path / "absent.json"
    for option in ("--data-path", "--path"):
        assert main(["datasets", "locomo", option, str(path), "--no-stats"]) == 2
        assert str(path) in capsys.readouterr().err

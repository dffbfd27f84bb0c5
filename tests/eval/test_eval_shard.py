"""Shards and ``himga merge``: N shard runs merge into exactly the content of one local run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from himga._cli import main
from himga.eval._shard import Shard, ShardSpecError
from himga.llm import ChatMessage, FakeLLMServer
from himga.runs import PER_RUN_FIELDS

# Timings differ between any two runs, local ones included.
TIMINGS = ("retrieval_latency_s", "latency_s")
BASE = ["--memory", "keyword", "--limit", "3", "--no-preflight", "--no-progress"]


def _results(out: Path) -> list[dict[str, Any]]:
    lines = (out / "results.jsonl").read_text("utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS} for line in lines]


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _manifest_differences(one: Path, other: Path) -> set[str]:
    a = _flat(json.loads((one / "manifest.json").read_text("utf-8")))
    b = _flat(json.loads((other / "manifest.json").read_text("utf-8")))
    return {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}


def assert_same_run(local: Path, merged: Path) -> None:
    assert _results(merged) == _results(local)
    assert (merged / "metrics.json").read_bytes() == (local / "metrics.json").read_bytes()
    differing = _manifest_differences(local, merged)
    assert {key for key in differing if not key.startswith(PER_RUN_FIELDS)} == set()
    assert _manifest_differences(local, local) == set()


@pytest.fixture(scope="module")
def local_run(shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
        out = tmp_path_factory.mktemp("local") / "run"
        assert main(["eval", *BASE, "--out", str(out)]) == 0
    return out


@given(st.lists(st.text(min_size=1, max_size=12), unique=True), st.integers(1, 7))
def test_every_sample_is_in_exactly_one_shard_whatever_the_order(
    ids: list[str], count: int
) -> None:
    shards = [Shard(i, count) for i in range(count)]
    for sample_id in ids:
        assert sum(shard.contains(sample_id) for shard in shards) == 1
        assert shards[Shard.of(sample_id, count)].contains(sample_id)
    assert Shard.of("conv-26", 4) == Shard.of("conv-26", 4)


@pytest.mark.parametrize("text", ["4/3", "0/2", "-1/2", "1", "a/b", "0/0", "1/0", "1/2/3"])
def test_malformed_shards_are_refused(text: str) -> None:
    with pytest.raises(ShardSpecError, match="shard"):
        Shard.parse(text)


def test_shard_counts_from_1_as_playwright_jest_and_vitest_do() -> None:
    assert Shard.parse("1/2") == Shard(0, 2)  # the first half
    assert Shard.parse(" 5 / 5 ") == Shard(4, 5)  # the last
    assert str(Shard(2, 5)) == "3/5"
    with pytest.raises(ShardSpecError, match=r"1 <= I <= N \(I counts from 1: 1/2 is the first"):
        Shard.parse("0/2")


@given(count=st.integers(1, 50), data=st.data())
def test_shard_text_round_trips(count: int, data: st.DataObject) -> None:
    shard = Shard(data.draw(st.integers(0, count - 1)), count)
    assert Shard.parse(str(shard)) == shard


def test_bad_shards_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("0/2", "3/2"):
        with pytest.raises(SystemExit) as exit_info:
            main(["eval", "--shard", text])
        assert exit_info.value.code == 2
        last = capsys.readouterr().err.splitlines()[-1]
        assert "I counts from 1: 1/2 is the first shard" in last


# Each example runs up to 8 himga eval commands: few examples, more under CI=true.
@pytest.mark.slow
@settings(
    max_examples=8 if os.environ.get("CI") == "true" else 5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(count=st.integers(1, 4), data=st.data())
def test_shards_merge_into_the_local_run_after_random_resumes(
    local_run: Path,
    shared_datasets: Path,
    tmp_path_factory: pytest.TempPathFactory,
    count: int,
    data: st.DataObject,
) -> None:
    root = tmp_path_factory.mktemp("shards")
    runs = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
        for index in range(count):
            out = root / f"s{index}"
            argv = ["eval", *BASE, "--shard", f"{index + 1}/{count}", "--out", str(out)]
            assert main(argv) == 0
            # Interrupted after a random number of finished questions, then resumed.
            checkpoint = out / "checkpoint.jsonl"
            lines = checkpoint.read_text("utf-8").splitlines(keepends=True)
            kept = data.draw(st.integers(1, len(lines)), label=f"checkpoint lines of shard {index}")
            if kept < len(lines):
                checkpoint.write_text("".join(lines[:kept]), "utf-8")
                assert main([*argv, "--resume"]) == 0
            runs.append(str(out))
    order = data.draw(st.permutations(runs), label="order given to merge")
    assert main(["merge", *order, "--out", str(root / "merged")]) == 0
    assert_same_run(local_run, root / "merged")
    merged = (root / "merged" / "checkpoint.jsonl").read_text("utf-8").splitlines()
    assert len(merged) == 1 + len(_results(local_run))


@pytest.fixture(scope="module")
def two_shards(
    local_run: Path, shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    root = tmp_path_factory.mktemp("two")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
        for index in range(2):
            argv = ["eval", *BASE, "--shard", f"{index + 1}/2", "--out", str(root / f"s{index}")]
            assert main(argv) == 0
    return root


def _merge_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["merge", *argv]) == 2
    return capsys.readouterr().err


def test_merge_says_which_shard_is_missing_or_doubled(
    two_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s0 = str(two_shards / "s0")
    out = str(tmp_path / "m")
    assert "shard(s) 2/2 missing: got only 1/2" in _merge_error(capsys, s0, "--out", out)
    assert "shard 1/2 is given twice" in _merge_error(capsys, s0, s0, "--out", out)
    assert not (tmp_path / "m").exists()


def test_the_manifest_stores_the_shard_as_himga_0_1_0_did(two_shards: Path) -> None:
    # --shard 1/2 is stored as index 0, as 0.1.0 stored its --shard 0/2: runs of either
    # version read (and merge) alike.
    manifest = json.loads((two_shards / "s0" / "manifest.json").read_text("utf-8"))
    assert manifest["shard"] == {"index": 0, "count": 2, "file": "shard.json"}
    assert manifest["arguments"]["shard"] == "1/2"


def _rewrite_results(run: Path, text: str) -> None:
    """Replace a run's results.jsonl and the checksum its manifest records of it."""
    (run / "results.jsonl").write_text(text, "utf-8")
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    manifest["results_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")


def test_merge_says_which_question_is_missing_or_twice(
    two_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "s1"
    shutil.copytree(two_shards / "s1", broken)
    lines = (broken / "results.jsonl").read_text("utf-8").splitlines(keepends=True)
    gone = json.loads(lines[-1])
    _rewrite_results(broken, "".join(lines[:-1]))
    err = _merge_error(capsys, str(two_shards / "s0"), str(broken), "--out", str(tmp_path / "m"))
    assert (
        f"1 question(s) missing from every shard: {gone['sample_id']}/{gone['question_id']}" in err
    )

    _rewrite_results(broken, "".join([*lines, lines[0]]))
    err = _merge_error(capsys, str(two_shards / "s0"), str(broken), "--out", str(tmp_path / "m"))
    assert "appears twice" in err

    # Edited behind the manifest's back: refused before anything is merged.
    (broken / "results.jsonl").write_text("".join(lines[:-1]), "utf-8")
    err = _merge_error(capsys, str(two_shards / "s0"), str(broken), "--out", str(tmp_path / "m"))
    assert "does not match the SHA-256 recorded in manifest.json" in err


def test_merge_refuses_shards_of_another_run_or_dataset(
    two_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "s1"
    shutil.copytree(two_shards / "s1", other)
    manifest = json.loads((other / "manifest.json").read_text("utf-8"))
    manifest["dataset"]["sha256"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    err = _merge_error(capsys, str(two_shards / "s0"), str(other), "--out", str(tmp_path / "m"))
    assert "ran on different data: dataset sha256" in err

    header, *rest = (other / "checkpoint.jsonl").read_text("utf-8").splitlines(keepends=True)
    record = json.loads(header)
    record["run"]["memory_repr"] = "KeywordMemory(k=99)"
    (other / "checkpoint.jsonl").write_text(json.dumps(record) + "\n" + "".join(rest), "utf-8")
    manifest["run_identity"] = "f" * 64
    (other / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    err = _merge_error(capsys, str(two_shards / "s0"), str(other), "--out", str(tmp_path / "m"))
    assert "run identities differ in memory_repr" in err


def test_merge_refuses_a_run_that_is_no_shard(
    local_run: Path, two_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _merge_error(capsys, str(local_run), "--out", str(tmp_path / "m"))
    assert "is not a shard run" in err
    assert "is not empty" in _merge_error(capsys, str(two_shards / "s0"), "--out", str(two_shards))


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:
        return '{"label": "CORRECT"}' if "Caroline" in prompt else '{"label": "WRONG"}'
    if "Answer yes or no only." in prompt:
        return "no"
    return "Caroline"


@pytest.mark.slow
def test_judged_llm_shards_merge_into_the_local_run(
    shared_datasets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    base = ["eval", "--memory", "bm25", "--llm", "openai", "--model", "fake", "--limit", "3"]
    base += ["--no-preflight", "--no-progress"]
    with FakeLLMServer(responder=_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert main([*base, "--out", str(tmp_path / "local")]) == 0
        for index in range(2):
            out = tmp_path / f"s{index}"
            assert main([*base, "--shard", f"{index + 1}/2", "--out", str(out)]) == 0
    shards = [str(tmp_path / "s0"), str(tmp_path / "s1")]
    assert all(_results(Path(shard)) for shard in shards)  # both shards hold questions
    assert main(["merge", *shards, "--out", str(tmp_path / "m")]) == 0
    assert_same_run(tmp_path / "local", tmp_path / "m")
    metrics = json.loads((tmp_path / "m" / "metrics.json").read_text("utf-8"))
    assert metrics["counts"]["judged"] == metrics["counts"]["answered"] > 0

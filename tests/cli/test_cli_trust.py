"""``himga eval`` a researcher can trust, through the real CLI on the real LoCoMo file.

The tests run ``python -m himga`` in a subprocess: pre-flight, memory errors
as data, one spec resolution, resume that cannot go stale, ``himga memories``
and ``--version``, the offline LLM path, and data warnings once. What only the
argument parser or the manifest decides runs in process (``run_cli``): a
subprocess would prove nothing more. (``compare`` and ``report`` are in
``test_cli_compare.py``.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga.memory import DenseMemory
from tests.cli_support import run_cli
from tests.fake_llm_support import fake_llm_command
from tests.trust_memories import MARKER

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TRUST = "tests.trust_memories"


def himga(
    *args: str, cwd: Path = PROJECT_ROOT, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m himga ARGS`` with the shared data, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "himga", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(autouse=True)
def _data(shared_datasets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    # The project root importable from any cwd, as for an installed plug-in.
    monkeypatch.setenv("PYTHONPATH", str(PROJECT_ROOT))


def _results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


def _timeless(out: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "retrieval_latency_s"} for r in _results(out)]


def _json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


# -- pre-flight --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "contract", "shown"),
    [
        ("AsyncRetrieve", "protocol-shape", "retrieve: is 'async def'"),
        ("NoneRetrieve", "retrieve-returns-str", "# -> None"),
        ("RaisingRetrieve", "retrieve-returns-str", "RuntimeError: retrieve is broken"),
    ],
)
def test_preflight_names_contract_reproducer_and_check_command_and_exits_2(
    tmp_path: Path, memory: str, contract: str, shown: str
) -> None:
    out = tmp_path / "run"
    code, stderr = run_cli(
        ["eval", "--memory", f"{TRUST}:{memory}", "--out", str(out), "--no-progress"]
    )
    assert code == 2, stderr
    assert f"pre-flight failed: memory '{TRUST}:{memory}' breaks [{contract}]" in stderr
    assert shown in stderr
    assert f"himga check {TRUST}:{memory}" in stderr
    if "minimal reproducer:" in stderr:  # it binds the user's class, as himga check does
        assert f"from {TRUST} import {memory} as factory" in stderr
        assert "routed" not in stderr
    assert "Traceback" not in stderr
    assert not out.exists()  # nothing ingested, nothing written


def test_the_preflight_hint_keeps_the_memory_arguments_shell_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"{TRUST}:NoneRetrieve"
    argv = ["--memory-arg", "k=3 "]  # a space: quoted for the shell
    code, stderr = run_cli(["eval", "--memory", spec, *argv, "--out", str(tmp_path / "r")])
    assert code == 2, stderr
    hint = f"see every contract: himga check {spec} --memory-arg 'k=3 '  (or skip"
    assert hint in stderr
    # The reproducer builds the memory with its arguments, under eval as under check.
    factory = "factory = functools.partial(NoneRetrieve, k=3)"
    assert factory in stderr
    # the hint's command runs, and finds the same failure
    assert main(["check", spec, "--memory-arg", "k=3 ", "--max-examples", "5"]) == 1
    checked = capsys.readouterr().out
    assert "FAIL  retrieve-returns-str" in checked
    assert factory in checked


def test_a_hanging_memory_fails_preflight_under_a_memory_timeout(tmp_path: Path) -> None:
    spec = f"{TRUST}:HangsAlways"
    run = himga("eval", "--memory", spec, "--memory-timeout", "0.1", "--out", str(tmp_path / "r"))
    assert run.returncode == 2, run.stderr
    assert "breaks [retrieve-returns-str]" in run.stderr
    assert "retrieve did not return within 0.1 s (MemoryCallTimeout" in run.stderr
    assert "m1.retrieve(" in run.stderr  # the reproducer ends with the hanging call


def test_without_hypothesis_preflight_still_checks_the_protocol_shape(tmp_path: Path) -> None:
    hide = "import sys, runpy; sys.modules['hypothesis'] = None; "  # as if not installed
    code = (
        hide + "sys.argv = ['himga', *sys.argv[1:]]; runpy.run_module('himga', run_name='__main__')"
    )
    common = ["--limit", "1", "--no-progress"]

    def run(memory: str, out: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", code, "eval", "--memory", memory, "--out", out, *common]
        return subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)

    broken = run(f"{TRUST}:AsyncRetrieve", str(tmp_path / "a"))
    assert broken.returncode == 2, broken.stderr
    assert "breaks [protocol-shape]" in broken.stderr
    fine = run("keyword", str(tmp_path / "b"))
    assert fine.returncode == 0, fine.stderr
    assert "pre-flight: only protocol-shape checked" in fine.stderr
    assert "pip install 'himga[testing]'" in fine.stderr
    assert _json(tmp_path / "b" / "manifest.json")["preflight"]["checked"] == ["protocol-shape"]


# -- memory errors are data ------------------------------------------------------------


def _memory_errors(out: Path) -> list[dict[str, Any]]:
    return [r["memory_error"] for r in _results(out) if r["memory_error"] is not None]


def test_a_raising_retrieve_is_recorded_per_question_and_excluded_from_the_metrics(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    spec = f"{TRUST}:RaisesOnMarker"  # passes pre-flight: the kit never asks for the marker
    run = himga("eval", "--memory", spec, "--limit", "1", "--out", str(out), "--no-progress")
    assert run.returncode == 3, run.stderr  # finished, incomplete
    results = _results(out)
    assert len(results) == 199  # conv-26: nothing lost
    failed = [r for r in results if r["memory_error"] is not None]
    assert failed
    assert all(MARKER in r["question"] for r in failed)
    assert all(r["memory_error"] is None for r in results if MARKER not in r["question"])
    first = failed[0]["memory_error"]
    # Where the memory raised: its file and line (relative to the run's directory), and
    # its own frames, never the guard's.
    raised_at = f"tests/trust_memories.py:{_line_of('raise ValueError(')} in retrieve"
    frames = first.pop("traceback")
    assert first == {
        "sample_id": "conv-26",
        "question_id": failed[0]["question_id"],
        "method": "retrieve",
        "type": "ValueError",
        "message": f"cannot retrieve for {failed[0]['question']!r}",
        "raised_at": raised_at,
    }
    assert 'trust_memories.py", line' in frames
    assert "raise ValueError(" in frames
    assert "_memory_calls.py" not in frames
    metrics = _json(out / "metrics.json")
    assert metrics["counts"]["memory_errors"] == len(failed)
    per_category = Counter(r["category"] for r in failed)
    for category, block in metrics["by_category"].items():
        assert block["memory_errors"] == per_category[category]
        assert block["with_evidence"] <= block["questions"] - block["memory_errors"]
    assert "mem-err" in run.stdout.splitlines()[0]
    assert f"incomplete: {len(failed)} questions failed in the memory" in run.stderr
    assert f"memory error: conv-26 {failed[0]['question_id']}: retrieve raised" in run.stderr
    assert f"(at {raised_at})" in run.stderr


def _line_of(code: str) -> int:
    """The line of ``tests/trust_memories.py`` that starts with ``code`` (once)."""
    lines = (PROJECT_ROOT / "tests" / "trust_memories.py").read_text("utf-8").splitlines()
    (number,) = [n for n, line in enumerate(lines, start=1) if line.strip().startswith(code)]
    return number


def test_a_memory_calling_os_exit_fails_its_questions_not_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = f"{TRUST}:ExitsOnMarker"  # passes pre-flight: the kit never asks for the marker
    run = himga("eval", "--memory", spec, "--limit", "1", "--out", str(out), "--no-progress")
    assert run.returncode == 3, run.stderr  # os._exit(0) ended the process with 0
    errors = _memory_errors(out)
    assert errors
    assert {e["type"] for e in errors} == {"ProcessExitCalled"}
    assert {e["raised_at"] for e in errors} == {
        f"tests/trust_memories.py:{_line_of('os._exit(0)')} in retrieve"
    }
    assert "retrieve raised ProcessExitCalled: os._exit(0) called" in run.stderr
    assert f"incomplete: {len(errors)} questions failed in the memory" in run.stderr
    # The checkpoint is whole: every question once, the failed ones retried by --resume.
    checkpoint = (out / "checkpoint.jsonl").read_text("utf-8").splitlines()
    assert len(checkpoint) == 1 + 199
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("memory", "method", "kind"),
    [
        ("NoneRetrieve", "retrieve", "TypeError"),
        ("AsyncRetrieve", "retrieve", "TypeError"),
        ("DictHits", "search", "TypeError"),
    ],
)
def test_wrong_return_types_are_recorded_without_preflight(
    tmp_path: Path, memory: str, method: str, kind: str
) -> None:
    out = tmp_path / "run"
    argv = ["--limit", "1", "--out", str(out), "--no-progress", "--no-preflight"]
    run = himga("eval", "--memory", f"{TRUST}:{memory}", *argv)
    assert run.returncode == 3, run.stderr
    errors = _memory_errors(out)
    assert len(errors) == len(_results(out)) == 199
    assert {(e["method"], e["type"]) for e in errors} == {(method, kind)}
    assert "RuntimeWarning" not in run.stderr  # an unawaited coroutine is closed, not leaked


def test_an_ingest_error_fails_its_sample_not_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = f"{TRUST}:IngestRaisesOnMarker"
    run = himga("eval", "--memory", spec, "--limit", "2", "--out", str(out), "--no-progress")
    assert run.returncode == 3, run.stderr
    results = _results(out)
    by_sample = Counter(r["sample_id"] for r in results if r["memory_error"] is not None)
    assert by_sample == {"conv-26": 199}  # every question of conv-26, none of conv-30
    assert {r["sample_id"] for r in results} == {"conv-26", "conv-30"}
    assert all(e["method"] == "ingest" and e["message"] == "disk full" for e in _memory_errors(out))
    assert _json(out / "metrics.json")["overall_with_adversarial"]["ranked"] > 0  # conv-30 scored


def test_a_hanging_call_times_out_costs_its_sample_and_the_run_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--limit", "2", "--out", str(out), "--no-progress", "--no-preflight"]
    run = himga("eval", "--memory", f"{TRUST}:HangsOnMarker", "--memory-timeout", "0.2", *argv)
    assert run.returncode == 3, run.stderr
    results = _results(out)
    assert len(results) == 199 + 105
    errors = _memory_errors(out)
    # conv-26's first question names the marker and never returns; the call keeps
    # its thread, the rest of the sample is not called, conv-30 gets a fresh memory.
    assert errors[0]["type"] == "MemoryCallTimeout"
    assert {e["type"] for e in errors[1:]} == {"MemoryBusyError"}
    assert {e["sample_id"] for e in errors} == {"conv-26"}
    assert all(r["memory_error"] is None for r in results if r["sample_id"] == "conv-30")
    assert _json(out / "manifest.json")["memory"]["timeout_s"] == 0.2


@pytest.mark.parametrize("value", ["inf", "1e300", "1e-9", "nan", "-1", "0", "soon"])
def test_a_memory_timeout_out_of_range_is_a_usage_error(tmp_path: Path, value: str) -> None:
    # It was accepted, and every question failed with "reset raised OverflowError".
    out = tmp_path / "r"
    code, stderr = run_cli(["eval", "--memory-timeout", value, "--limit", "1", "--out", str(out)])
    assert code == 2, stderr
    last = stderr.splitlines()[-1]
    assert "--memory-timeout" in last, last
    assert "expected seconds between 0.001 and" in last
    assert "or 'none' for no deadline" in last
    assert "Traceback" not in stderr
    assert not out.exists()


@pytest.mark.slow
def test_memory_calls_have_a_default_deadline_and_none_disables_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "default: 3600, 'none': no deadline" in " ".join(capsys.readouterr().out.split())
    argv = ["eval", "--memory", "keyword", "--limit", "1", "--no-progress", "--no-preflight"]
    assert run_cli([*argv, "--out", str(tmp_path / "a")])[0] == 0
    assert _json(tmp_path / "a" / "manifest.json")["memory"]["timeout_s"] == 3600
    code, stderr = run_cli([*argv, "--memory-timeout", "none", "--out", str(tmp_path / "b")])
    assert code == 0, stderr
    assert _json(tmp_path / "b" / "manifest.json")["memory"]["timeout_s"] is None


@pytest.mark.parametrize("deadline", [[], ["--memory-timeout", "none"]])
def test_the_first_ctrl_c_stops_a_run_whose_memory_hangs(
    tmp_path: Path, deadline: list[str]
) -> None:
    flag, out = tmp_path / "hanging", tmp_path / "run"
    argv = ["--memory", f"{TRUST}:HangsInSecondSample", "--limit", "2", "--no-preflight"]
    argv += [*deadline, "--no-progress", "--out", str(out)]
    process = subprocess.Popen(
        [sys.executable, "-m", "himga", "eval", *argv],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HIMGA_TEST_HANG_FLAG": str(flag)},
    )
    try:
        for _ in range(1200):  # a generous bound on reaching the hang, not a timing check
            if flag.exists() or process.poll() is not None:
                break
            time.sleep(0.1)
        assert flag.exists(), process.communicate(timeout=10)
        process.send_signal(signal.SIGINT)  # once
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    (line,) = stderr.splitlines()
    checkpoint = out / "checkpoint.jsonl"
    assert line == (
        f"himga eval: interrupted (Ctrl-C): 199 finished questions are kept in {checkpoint}; "
        "to go on, rerun the same command with --resume"
    )
    assert len(checkpoint.read_text("utf-8").splitlines()) == 1 + 199  # conv-26, all of it


@pytest.mark.slow
def test_a_memory_thread_that_never_ends_does_not_keep_himga_running(tmp_path: Path) -> None:
    # subprocess.run's timeout fails the test if himga waits for the thread.
    argv = ["--memory", f"{TRUST}:KeepsAThread", "--limit", "1", "--no-progress"]
    run = himga("eval", *argv, "--out", str(tmp_path / "r"), timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(_results(tmp_path / "r")) == 199
    assert "himga: exiting without waiting for thread(s) indexer" in run.stderr
    check = himga("check", f"{TRUST}:KeepsAThread", "--max-examples", "5", timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_a_limit_that_leaves_question_categories_out_says_so(tmp_path: Path) -> None:
    # LongMemEval is ordered by question type: its first 50 questions are all one type.
    argv = ["eval", "--limit", "50", "--no-progress", "--no-preflight"]
    code, stderr = run_cli([*argv, "--dataset", "longmemeval_oracle", "--out", str(tmp_path / "a")])
    assert code == 0, stderr
    (note,) = [line for line in stderr.splitlines() if "question categories" in line]
    assert note.startswith("himga eval: --limit 50 covers 1 of the ")
    asked = {r["category"] for r in _results(tmp_path / "a")}
    missing = note.split("no question of ")[1].split(" (")[0].split(", ")
    assert asked.isdisjoint(missing)
    code, stderr = run_cli(["eval", "--limit", "1", "--no-progress", "--out", str(tmp_path / "b")])
    assert code == 0, stderr
    assert "question categories" not in stderr  # conv-26 has every LoCoMo category


# -- one spec resolution, arguments, listing ---------------------------------------------

_LOCAL_MEMORY = """
    from himga.memory import KeywordMemory


    class LocalMemory(KeywordMemory):
        '''A memory in the current directory, as a plug-in author starts.'''

        VERSION = {version}

        def __repr__(self) -> str:
            return f"LocalMemory(k={{self.k}})"
"""


def _write_local(directory: Path, version: int) -> None:
    source = textwrap.dedent(_LOCAL_MEMORY.format(version=version))
    (directory / "localmem.py").write_text(source, "utf-8")


@pytest.mark.slow
def test_memory_args_and_current_directory_resolve_for_eval_and_check(tmp_path: Path) -> None:
    _write_local(tmp_path, version=1)
    out = tmp_path / "run"
    argv = ["--memory", "localmem:LocalMemory", "--memory-arg", "k=3", "--limit", "1"]
    run = himga("eval", *argv, "--out", str(out), "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    memory = _json(out / "manifest.json")["memory"]
    assert memory["arguments"] == {"k": 3}  # JSON when it parses
    assert memory["repr"] == "LocalMemory(k=3)"
    assert memory["distribution"] is None  # no installed distribution provides it
    check = himga("check", "localmem:LocalMemory", "--max-examples", "5", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    bad = himga("eval", "--memory", "bm25", "--memory-arg", "nope=x", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2
    assert "cannot create memory 'bm25' with nope='x': TypeError" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_memories_lists_registered_names_without_importing_plugins(tmp_path: Path) -> None:
    info = tmp_path / "loudplugin-2.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: loudplugin\nVersion: 2.5\n")
    (info / "entry_points.txt").write_text("[himga.memories]\nloud = loudmod:Loud\n")
    flag = tmp_path / "imported"
    (tmp_path / "loudmod.py").write_text(f"open({str(flag)!r}, 'w').close()\n")
    path = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{PROJECT_ROOT}"}
    run = himga("memories", env=path)
    assert run.returncode == 0, run.stderr
    rows = {line.split()[0]: line.split()[1:] for line in run.stdout.splitlines()[1:]}
    assert run.stdout.split()[:4] == ["name", "distribution", "version", "target"]
    assert rows["bm25"][0] == "himga"
    assert rows["bm25"][2] == "himga.memory:BM25Memory"
    assert rows["loud"] == ["loudplugin", "2.5", "loudmod:Loud", "-", "-"]  # a plug-in: unknown
    assert rows["bm25"][3:] == ["nothing", "none", "(cold", "=", "warm)"]
    assert rows["mem0"][3] == "embedder"
    assert not flag.exists()  # listed from metadata, never imported
    listed = himga(
        "memories", "--json", env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{PROJECT_ROOT}"}
    )
    assert listed.returncode == 0, listed.stderr
    entries = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    assert list(entries) == list(rows)  # the same memories, in the same order
    assert entries["loud"] == {
        "name": "loud",
        "description": "",  # its distribution has no Summary; the plug-in is not imported
        "target": "loudmod:Loud",
        "distribution": "loudplugin",
        "version": "2.5",
        "extras": [],
        "installed": True,
        "install": None,
        "needs": None,
        "cold_start": None,
    }
    assert entries["dense"]["extras"] == ["dense"]
    assert entries["dense"]["needs"] == DenseMemory.NEEDS
    assert entries["mcp"]["needs"].startswith("Node.js")
    assert entries["dense"]["description"].startswith("Turn-level dense retrieval")
    assert not flag.exists()
    version = himga("--version")
    assert version.returncode == 0
    assert version.stdout.strip().startswith("himga ")


# -- resume that cannot go stale ---------------------------------------------------------


@pytest.mark.slow
def test_a_changed_memory_source_refuses_to_resume_until_fresh(tmp_path: Path) -> None:
    _write_local(tmp_path, version=1)
    out = tmp_path / "run"
    argv = ["eval", "--memory", "localmem:LocalMemory", "--limit", "1", "--out", str(out)]
    argv += ["--no-progress", "--no-preflight"]
    assert himga(*argv, cwd=tmp_path).returncode == 0
    again = himga(*argv, cwd=tmp_path)
    assert again.returncode == 2  # an existing run is never mixed into silently
    assert "--resume to continue it or --fresh to start over" in again.stderr
    resumed = himga(*argv, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed 199 of 199 results from the checkpoint" in resumed.stdout

    _write_local(tmp_path, version=2)  # same class, same repr, other code
    stale = himga(*argv, "--resume", cwd=tmp_path)
    assert stale.returncode == 2
    assert "differs in memory_source_sha256" in stale.stderr
    assert "--fresh" in stale.stderr
    other_args = himga(*argv, "--resume", "--memory-arg", "k=3", cwd=tmp_path)
    assert "memory_arguments.k: null != 3" in other_args.stderr
    fresh = himga(*argv, "--fresh", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert "resumed" not in fresh.stdout
    manifest = _json(out / "manifest.json")
    assert manifest["resumed"] == 0
    assert len(manifest["run_identity"]) == 64


_CLONE = {
    "clonemem/__init__.py": "from clonemem._impl import CloneMemory\n",
    "clonemem/_impl.py": (
        "from himga.memory import KeywordMemory\n\n\nclass CloneMemory(KeywordMemory):\n"
        '    """The keyword memory, from a package copied to several places."""\n'
    ),
}


def _clone(directory: Path) -> Path:
    for name, text in _CLONE.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, "utf-8")
    return directory


@pytest.mark.slow
def test_identical_code_at_two_paths_merges_and_a_moved_run_resumes(tmp_path: Path) -> None:
    # Issue 34 (3): the source hash named each file's absolute path, so two clones of
    # one memory at different paths were two run identities.
    one, two = _clone(tmp_path / "one"), _clone(tmp_path / "two")
    argv = ["eval", "--memory", "clonemem:CloneMemory", "--limit", "3", "--no-progress"]
    argv += ["--no-preflight"]
    local = tmp_path / "local"
    assert himga(*argv, "--out", str(local), cwd=one).returncode == 0
    for index, clone in ((1, one), (2, two)):
        shard = himga(
            *argv, "--shard", f"{index}/2", "--out", str(tmp_path / f"s{index}"), cwd=clone
        )
        assert shard.returncode == 0, shard.stderr
    merged = tmp_path / "merged"
    merge = himga("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(merged))
    assert merge.returncode == 0, merge.stderr
    assert _timeless(merged) == _timeless(local)

    # A run cut short in one clone, its directory moved, finished from the other.
    checkpoint = (local / "checkpoint.jsonl").read_text("utf-8").splitlines(keepends=True)
    (local / "checkpoint.jsonl").write_text("".join(checkpoint[:51]), "utf-8")
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    local.rename(moved)
    resumed = himga(*argv, "--out", str(moved), "--resume", cwd=two)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed 50 of {len(checkpoint) - 1} results" in resumed.stdout
    assert _timeless(moved) == _timeless(merged)


# -- the LLM path, offline ---------------------------------------------------------------


@pytest.mark.slow
def test_fake_llm_serves_the_llm_path_without_echoed_verdicts(tmp_path: Path) -> None:
    with fake_llm_command() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        out = tmp_path / "run"
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "fake"}
        argv = ["--memory", "bm25", "--llm", "anthropic", "--model", "fake", "--limit", "1"]
        run = himga("eval", *argv, "--out", str(out), "--no-progress", env=env)
        assert run.returncode == 0, run.stderr
    assert server.returncode == 0
    assert "stopped after" in server.output
    metrics = _json(out / "metrics.json")
    manifest = _json(out / "manifest.json")
    assert manifest["arguments"]["judge"] is True
    assert manifest["judge"]["errors"] == 0
    results = _results(out)
    assert all(r["prediction"] for r in results)
    # The echo responder put the prompt, verdict words included, into every verdict
    # (judge 1.0 beside F1 0.009); these verdicts follow the responder's own rule.
    for r in results:
        said = set(re.findall(r"[a-z0-9]+", r["prediction"].lower()))
        if r["category"] == "adversarial":
            expected = "not mentioned" in r["prediction"].lower()
        else:
            gold = set(re.findall(r"[a-z0-9]+", r["answer"].lower()))
            expected = bool(gold) and gold <= said
        assert r["judge"] == float(expected), r
    overall = metrics["overall_with_adversarial"]
    assert overall["judged"] == len(results)
    assert overall["judge"] < 0.5
    assert overall["f1"] < 0.5

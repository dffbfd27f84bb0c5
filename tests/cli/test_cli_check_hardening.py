"""``himga check`` never passes a memory that exits, takes --memory-arg, explains bad specs.

A memory is checked in a ``python -m himga check`` subprocess (one that exits must not end
pytest); what the argument parser refuses before any memory is imported runs in process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from himga._cli import main
from himga._cli._check import INTERRUPTED
from tests.cli_support import cwd, run_cli

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FAST = ["--max-examples", "5", "--derandomize"]

MEMORIES = """
import os
import sys
import threading


class Base:
    def __init__(self, k=1):
        self.k = k
        self.lines = []

    def ingest(self, message, session):
        self.lines.append(message.content)

    def retrieve(self, query):
        return "\\n".join(self.lines[-self.k :]) if query.strip() else ""

    def reset(self):
        self.lines.clear()


class ExitsZeroInRetrieve(Base):
    def retrieve(self, query):
        sys.exit(0)


class RaisesSystemExitInIngest(Base):
    def ingest(self, message, session):
        raise SystemExit("done")


class ExitsInFactory(Base):
    def __init__(self):
        sys.exit(0)


class OsExitsZeroInRetrieve(Base):
    def retrieve(self, query):
        os._exit(0)


class OsExitsInIngest(Base):
    def ingest(self, message, session):
        os._exit(3)


class OsExitsInFactory(Base):
    def __init__(self):
        os._exit(0)


class Prints(Base):
    def ingest(self, message, session):
        print("the memory's own print")
        os.write(1, b"the memory's own raw write\\n")
        super().ingest(message, session)


class RaisesBaseException(Base):
    def reset(self):
        raise BaseException("bare")


class Interrupts(Base):
    def retrieve(self, query):
        raise KeyboardInterrupt


class Hangs(Base):
    def retrieve(self, query):
        threading.Event().wait()


class NeedsK(Base):
    def __init__(self, k):
        if k != 3:
            raise ValueError(f"k must be 3, got {k!r}")
        super().__init__(k)
"""


def _check(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "exiting_memories.py").write_text(MEMORIES)
    return subprocess.run(
        [sys.executable, "-m", "himga", "check", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize(
    ("memory", "line"),
    [
        ("ExitsZeroInRetrieve", "FAIL  retrieve-returns-str  retrieve raised SystemExit: 0"),
        ("RaisesSystemExitInIngest", "FAIL  retrieve-returns-str  ingest raised SystemExit: done"),
        ("ExitsInFactory", "FAIL  protocol-shape  factory() raised SystemExit: 0"),
        (
            "OsExitsZeroInRetrieve",
            "FAIL  retrieve-returns-str  retrieve raised ProcessExitCalled: os._exit(0) called",
        ),
        (
            "OsExitsInIngest",
            "FAIL  retrieve-returns-str  ingest raised ProcessExitCalled: os._exit(3) called",
        ),
        (
            "OsExitsInFactory",
            "FAIL  protocol-shape  factory() raised ProcessExitCalled: os._exit(0) called",
        ),
        ("RaisesBaseException", "raised BaseException: bare"),
    ],
)
def test_a_memory_that_exits_fails_a_contract(tmp_path: Path, memory: str, line: str) -> None:
    result = _check(tmp_path, f"exiting_memories:{memory}", *FAST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert line in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_json_output_holds_only_json_whatever_the_memory_prints(tmp_path: Path) -> None:
    result = _check(tmp_path, "exiting_memories:Prints", "--json", *FAST)
    assert result.returncode == 0, result.stdout + result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {record["status"] for record in records} <= {"pass", "n/a"}
    assert "the memory's own print" in result.stderr  # moved, not lost
    assert "the memory's own raw write" in result.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_json_names_where_a_memory_called_os_exit(tmp_path: Path) -> None:
    argv = ["--json", "--contract", "retrieve-returns-str", *FAST]
    result = _check(tmp_path, "exiting_memories:OsExitsZeroInRetrieve", *argv)
    assert result.returncode == 1, result.stdout + result.stderr
    records = {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}
    failed = records["retrieve-returns-str"]
    assert failed["status"] == "fail"
    line = MEMORIES.splitlines().index("        os._exit(0)") + 1  # lines count from 1
    assert failed["raised_at"] == f"exiting_memories.py:{line} in retrieve"


@pytest.mark.slow
@pytest.mark.integration
def test_a_memory_raising_keyboard_interrupt_is_never_a_pass(tmp_path: Path) -> None:
    result = _check(tmp_path, "exiting_memories:Interrupts", *FAST)
    assert result.returncode == INTERRUPTED
    assert result.stderr.splitlines()[-1].startswith("himga check: interrupted")
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_memory_args_reach_the_factory(tmp_path: Path) -> None:
    without = _check(tmp_path, "exiting_memories:NeedsK", *FAST)
    assert without.returncode == 1  # k is required: protocol-shape fails on the factory
    result = _check(tmp_path, "exiting_memories:NeedsK", "--memory-arg", "k=3", *FAST)
    assert result.returncode == 0, result.stdout + result.stderr
    wrong = _check(tmp_path, "exiting_memories:NeedsK", "--memory-arg", "k=4", *FAST)
    assert wrong.returncode == 1
    assert "k must be 3, got 4" in wrong.stdout


@pytest.mark.parametrize(
    "argv", [["--memory-arg", "k"], ["--memory-arg", "k=1", "--memory-arg", "k=2"]]
)
def test_a_malformed_memory_arg_is_a_one_line_error(argv: list[str]) -> None:
    code, stderr = run_cli(["check", "exiting_memories:Base", *argv, *FAST])
    assert code == 2
    (line,) = stderr.splitlines()
    assert line.startswith("himga check: error: memory argument")


@pytest.mark.parametrize("spec", ["../../x:y", "dir/mod.py:Memory", "./mod:M"])
def test_a_file_path_spec_says_the_module_must_be_importable(tmp_path: Path, spec: str) -> None:
    with cwd(tmp_path):
        code, stderr = run_cli(["check", spec])
    assert code == 2
    (line,) = stderr.splitlines()
    assert "is not a module name" in line
    assert "importable from the current directory" in line


@pytest.mark.slow
@pytest.mark.integration
def test_a_hanging_memory_fails_the_contract_under_check_at_its_deadline(tmp_path: Path) -> None:
    # It blocked himga check for ever.
    result = _check(tmp_path, "exiting_memories:Hangs", "--memory-timeout", "0.2", *FAST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL  retrieve-returns-str  retrieve did not return within 0.2 s" in result.stdout
    assert "m1.retrieve(" in result.stdout  # the reproducer ends with the call that hung
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_check_states_its_default_deadline_and_validates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(per call; default: 120, 'none': no deadline)" in help_text
    for value in ("inf", "nan", "-3", "1e-9"):
        code, stderr = run_cli(["check", "exiting_memories:Base", "--memory-timeout", value])
        assert code == 2
        assert "expected seconds between" in stderr.splitlines()[-1]
    fine = _check(tmp_path, "exiting_memories:Base", "--memory-timeout", "none", *FAST)
    assert fine.returncode == 0, fine.stdout + fine.stderr


@pytest.mark.integration
def test_a_module_outside_the_current_directory_says_where_it_must_be(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mymodule.py").write_text("class Mem:\n    pass\n")
    result = _check(tmp_path, "mymodule:Mem")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "no module named 'mymodule'" in line
    assert f"importable from the current directory, {tmp_path}, a directory on PYTHONPATH" in line

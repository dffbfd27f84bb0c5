"""A memory that exits, raises ``BaseException`` or returns text that is not Unicode fails
its questions, recorded per question; it never ends ``himga eval`` silently (issue 26).

A boolean for a numeric constructor argument (``--memory-arg k=true``) is refused, not
taken for 1. (``himga check`` on such memories: ``tests/cli/test_cli_check_hardening.py``.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from himga.memory import KeywordMemory
from tests.cli_support import QUICK, cwd, offline_cli, run_cli

pytestmark = pytest.mark.usefixtures("loopback_only")
HERE = "tests.cli.test_cli_bad_memories"


class ExitsInRetrieve(KeywordMemory):
    def retrieve(self, query: str, /) -> str:
        sys.exit(0)


class RaisesBaseException(KeywordMemory):
    def retrieve(self, query: str, /) -> str:
        raise BaseException("not an Exception")


class LoneSurrogate(KeywordMemory):
    def retrieve(self, query: str, /) -> str:
        return "half of a pair: \ud800"


class SurrogateInItsError(KeywordMemory):
    def retrieve(self, query: str, /) -> str:
        raise ValueError("broken \udcff")


def exits_when_made() -> Any:
    sys.exit(0)


@pytest.fixture
def offline(tmp_path: Path) -> Any:
    with offline_cli(tmp_path), cwd(tmp_path):
        yield tmp_path


@pytest.mark.parametrize(
    ("memory", "recorded"),
    [
        ("ExitsInRetrieve", "retrieve raised SystemExit: 0"),
        ("RaisesBaseException", "retrieve raised BaseException: not an Exception"),
        ("LoneSurrogate", "retrieve raised ValueError: returned a str that is not Unicode text"),
        ("SurrogateInItsError", "retrieve raised ValueError: broken \\udcff"),
    ],
)
def test_a_misbehaving_memory_fails_its_questions_and_the_run_exits_3(
    offline: Path, memory: str, recorded: str
) -> None:
    code, stderr = run_cli(["eval", *QUICK, "--memory", f"{HERE}:{memory}", "--out", "out"])
    assert code == 3, stderr
    assert "Traceback" not in stderr
    metrics = json.loads(Path("out/metrics.json").read_text("utf-8"))
    assert metrics["counts"]["memory_errors"] == metrics["counts"]["questions"] == 6
    assert recorded in stderr
    # What was recorded can be read back: the run resumes (nothing new to do but retry).
    assert (
        run_cli(["eval", *QUICK, "--memory", f"{HERE}:{memory}", "--out", "out", "--resume"])[0]
        == 3
    )


def test_a_memory_factory_that_exits_is_a_one_line_error(offline: Path) -> None:
    code, stderr = run_cli(["eval", *QUICK, "--memory", f"{HERE}:exits_when_made"])
    assert code == 2
    assert stderr == "himga eval: error: the memory called sys.exit(0)\n"


@pytest.mark.parametrize("memory", ["keyword", f"{HERE}:LoneSurrogate"])
def test_a_boolean_for_a_numeric_memory_argument_is_a_one_line_error(
    offline: Path, memory: str
) -> None:
    code, stderr = run_cli(["eval", *QUICK, "--memory", memory, "--memory-arg", "k=true"])
    assert code == 2
    assert stderr == (
        f"himga eval: error: memory argument k=true: memory {memory!r} takes a number (int) "
        "for 'k', not a boolean\n"
    )
    assert run_cli(["eval", *QUICK, "--memory", memory, "--memory-arg", "k=3"])[0] in (0, 3)

"""The ``himga`` command line in process, on a small LoCoMo file, offline.

:func:`offline_cli` points ``$HIMGA_DATA_DIR`` at a two-conversation LoCoMo file
(:func:`conversation`), the dataset cache at an empty directory, and both LLM
providers at a loopback fake LLM; :func:`run_cli` runs ``himga ARGV`` with its
output captured, in the directory :func:`cwd` chose.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga.llm import FakeLLMServer

__all__ = ["QUICK", "conversation", "cwd", "offline_cli", "run_cli"]

#: A quick offline eval: the keyword memory, no pre-flight, no progress bars.
QUICK = ["--memory", "keyword", "--no-preflight", "--no-progress"]

TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "That sounds great! I painted a sunset over the lake last week."),
    ("Caroline", "I am researching adoption agencies; I want to give kids a home."),
    ("Melanie", "Camping with the kids next month, we love the mountains."),
]


def conversation(sample_id: str) -> dict[str, Any]:
    session = [
        {"speaker": speaker, "dia_id": f"D1:{i}", "text": text}
        for i, (speaker, text) in enumerate(TURNS, start=1)
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": session,
        },
        "qa": [
            {
                "question": "When did Caroline go to the support group?",
                "answer": "7 May 2023",
                "evidence": ["D1:1"],
                "category": 2,
            },
            {
                "question": "What did Melanie paint?",
                "answer": "a sunset",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "What is Caroline researching?",
                "answer": "adoption agencies",
                "evidence": ["D1:3"],
                "category": 1,
            },
        ],
    }


@contextlib.contextmanager
def offline_cli(root: Path) -> Iterator[pytest.MonkeyPatch]:
    """``root/data/locomo/locomo10.json`` (two conversations) as the data, the fake LLM
    serving for both providers, no plug-ins: the patch, to add to, undone on exit."""
    data = root / "data" / "locomo"
    data.mkdir(parents=True)
    dataset = [conversation("conv-1"), conversation("conv-2")]
    (data / "locomo10.json").write_text(json.dumps(dataset), encoding="utf-8")
    with FakeLLMServer() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIMGA_DATA_DIR", str(root / "data"))
        patch.setenv("HIMGA_CACHE_DIR", str(root / "no-cache"))
        patch.setenv("HIMGA_NO_PLUGINS", "1")
        patch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        patch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        patch.setenv("ANTHROPIC_API_KEY", "fake")
        patch.setenv("OPENAI_API_KEY", "fake")
        yield patch


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(argv: list[str], *, strict_stdout: bool = False) -> tuple[int, str]:
    """``himga ARGV`` in process: its exit status and stderr (any escaping exception fails).

    ``strict_stdout``: stdout encodes as UTF-8 and fails on what it cannot encode (a lone
    surrogate), as the stdout of a process in a UTF-8 locale does.
    """
    stderr = io.StringIO()
    stdout: io.TextIOBase = io.StringIO()
    if strict_stdout:
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code: object = main(argv)
            except SystemExit as exc:  # argparse: --help, --version, bad usage
                code = exc.code
            except KeyboardInterrupt as exc:  # a failure of the test, not a stop of pytest
                raise AssertionError(f"KeyboardInterrupt escaped himga {argv}") from exc
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert isinstance(code, int), f"himga {argv}: exit status {code!r}"
    return code, stderr.getvalue()

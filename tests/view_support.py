"""Runs to look at, made by ``himga eval`` on the small LoCoMo file of :mod:`tests.cli_support`.

:func:`make_runs` writes three run directories under ``root/runs``: ``keyword`` and
``bm25``, each answered and judged by the loopback fake LLM (:func:`offline_judge_responder`:
real verdicts, so the two runs' verdicts differ), and ``killed``, a bm25 run killed with
``kill -9`` after answering :data:`KILLED_AFTER` of its 6 questions (the LLM holds the
others), so it has a checkpoint and no manifest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from himga.eval.judge import offline_judge_responder
from himga.llm import ChatRequest, FakeLLMServer
from tests.cli_support import cwd, offline_cli, run_cli

__all__ = ["KILLED_AFTER", "QUESTIONS", "make_runs"]

#: Questions of the small LoCoMo file (two conversations of three).
QUESTIONS = 6
#: Questions the killed run answered before it was killed.
KILLED_AFTER = 3

KILLED = "runs/killed"
_LLM = ["--no-preflight", "--no-progress", "--llm", "anthropic", "--model", "fake"]


def _is_answer(request: ChatRequest) -> bool:
    return str(request[-1]["content"]).endswith("Short answer:")


def make_runs(root: Path) -> Path:
    """The runs directory ``root/runs`` with ``keyword``, ``bm25`` and ``killed`` in it."""
    release = threading.Event()
    answered: list[int] = []
    lock = threading.Lock()

    def hold_after_some(request: ChatRequest) -> str:
        if _is_answer(request):
            with lock:
                answered.append(1)
                held = len(answered) > KILLED_AFTER
            if held:
                release.wait(60)
        return offline_judge_responder(request)

    with (
        offline_cli(root) as patch,
        FakeLLMServer(responder=offline_judge_responder) as judged,
        FakeLLMServer(responder=hold_after_some) as holding,
        cwd(root),
    ):
        patch.setenv("ANTHROPIC_BASE_URL", judged.anthropic_base_url)
        for memory in ("keyword", "bm25"):
            code, stderr = run_cli(["eval", "--memory", memory, *_LLM, "--out", f"runs/{memory}"])
            assert code == 0, stderr
        patch.setenv("ANTHROPIC_BASE_URL", holding.anthropic_base_url)
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "himga",
                "eval",
                "--memory",
                "bm25",
                *_LLM,
                "--out",
                "runs/killed",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        checkpoint = root / "runs" / "killed" / "checkpoint.jsonl"
        deadline = time.monotonic() + 600  # a loaded machine takes minutes to start himga
        try:
            while time.monotonic() < deadline and child.poll() is None:
                if checkpoint.exists() and checkpoint.read_bytes().count(b"\n") > KILLED_AFTER:
                    break
                time.sleep(0.02)
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
            _, stderr = child.communicate()
            release.set()
        assert child.returncode == -signal.SIGKILL, stderr
    return root / "runs"

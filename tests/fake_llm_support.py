"""What the end-to-end tests share about the loopback FakeLLMServer."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from himga.agent import BaseAgent
from himga.data.schema import Sample
from himga.eval import EvalResult, JudgeScores, batch_judge, run_eval
from himga.llm import ChatMessage, FakeLLMServer, RecordedRequest, get_client
from himga.memory import BM25Memory


@dataclass
class FakeLLMCommand:
    """A ``himga fake-llm --port 0`` process: its ``base_url``; once stopped, its
    ``returncode`` and what it printed (``output``)."""

    base_url: str
    returncode: int | None = None
    output: str = ""


@contextmanager
def fake_llm_command() -> Iterator[FakeLLMCommand]:
    """Runs ``himga fake-llm --port 0`` for the block, then stops it with SIGTERM."""
    server = subprocess.Popen(
        [sys.executable, "-m", "himga", "fake-llm", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    command = FakeLLMCommand(server.stdout.readline().split()[4])
    try:
        yield command
    finally:
        server.send_signal(signal.SIGTERM)
        command.output, _ = server.communicate(timeout=30)
        command.returncode = server.returncode


#: The test API key for each provider.
KEYS = {"anthropic": "sk-ant-test-key", "openai": "sk-openai-test-key"}


def keyword_responder(
    rules: Sequence[tuple[str, str]], default: str
) -> Callable[[list[ChatMessage]], str]:
    """A responder: the reply of the first rule whose keyword the last message holds."""

    def respond(messages: list[ChatMessage]) -> str:
        prompt = messages[-1]["content"]
        for keyword, reply in rules:
            if keyword in prompt:
                return reply
        return default

    return respond


def point_at(server: FakeLLMServer, api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Points ``api``'s base URL and key variables at ``server``."""
    prefix = api.upper()
    monkeypatch.setenv(f"{prefix}_BASE_URL", getattr(server, f"{api}_base_url"))
    monkeypatch.setenv(f"{prefix}_API_KEY", KEYS[api])


def answer_and_judge(
    samples: list[Sample],
    responder: Callable[[list[ChatMessage]], str],
    api: str,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[EvalResult], JudgeScores, list[RecordedRequest]]:
    """BM25 answers ``samples`` and the benchmark's judge scores them, both against a
    FakeLLMServer speaking ``api``: the results, the scores, the requests it got."""
    with FakeLLMServer(responder=responder) as server:
        point_at(server, api, monkeypatch)
        llm = get_client(api)
        agent = BaseAgent(memory=BM25Memory(), llm=llm)
        results = run_eval(samples, agent=agent, show_progress=False)
        scores = batch_judge(results, llm=llm, show_progress=False)
        return results, scores, server.requests

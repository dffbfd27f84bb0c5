"""The LLM call cache: content addressing, persistence, concurrency, kill -9, zero-call reruns."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga._cli import main
from himga.eval import batch_judge
from himga.llm import (
    CacheSchemaError,
    CachingClient,
    ChatMessage,
    Completion,
    FakeLLMServer,
    LLMCache,
    cache_key,
    get_client,
)
from tests.test_eval_support import ScriptedLLM, make_result

messages_strategy = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": st.text()}
    ),
    min_size=1,
    max_size=4,
)
request_strategy = st.tuples(
    st.sampled_from(["anthropic", "openai"]),
    st.text(min_size=1, max_size=8),
    st.fixed_dictionaries(
        {
            "max_tokens": st.integers(1, 4096),
            "temperature": st.none() | st.floats(0, 2, allow_nan=False),
        }
    ),
    messages_strategy,
)


@given(request_strategy, request_strategy)
def test_two_requests_share_a_key_exactly_when_they_are_equal(a: tuple, b: tuple) -> None:  # type: ignore[type-arg]
    assert (cache_key(*a) == cache_key(*b)) == (a == b)


@given(request_strategy)
def test_the_key_sees_every_message_and_the_settings(request: tuple) -> None:  # type: ignore[type-arg]
    provider, model, settings, messages = request
    key = cache_key(provider, model, settings, messages)
    assert key == cache_key(provider, model, dict(reversed(settings.items())), list(messages))
    longer = [*messages, {"role": "user", "content": ""}]
    assert cache_key(provider, model, settings, longer) != key
    budget = {**settings, "max_tokens": settings["max_tokens"] + 1}
    assert cache_key(provider, model, budget, messages) != key


def test_entries_persist_and_hits_and_misses_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "llm.sqlite"
    cache = LLMCache(path)
    assert cache.get("k") is None
    cache.put("k", Completion("reply", 3, 1, "m"))
    cache.put("k", Completion("other", 9, 9, "m"))  # the first reply stays
    assert cache.get("k") == Completion("reply", 3, 1, "m")
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)
    cache.close()
    reopened = LLMCache(path)
    assert reopened.get("k") == Completion("reply", 3, 1, "m")
    assert len(reopened) == 1


def test_a_file_that_is_not_a_cache_is_refused_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not sqlite at all " * 100)
    with pytest.raises(CacheSchemaError, match=r"notes\.txt"):
        LLMCache(path)


def test_sdk_client_answers_a_repeated_request_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    ask: list[ChatMessage] = [{"role": "user", "content": "hello there"}]
    with FakeLLMServer() as server:
        first = get_client("anthropic", api_key="k", base_url=server.base_url, cache=path)
        reply = first.chat(ask)
        assert asyncio.run(first.achat(ask)).text == reply
        first.chat(ask, max_tokens=3)  # another budget is another request
        assert server.request_count == 2
        second = get_client("anthropic", api_key="k", base_url=server.base_url, cache=path)
        assert second.chat(ask) == reply
        assert second.usage.calls == 0
        assert second.cache_stats is not None
        assert (second.cache_stats.hits, second.cache_stats.misses) == (1, 0)
        other_model = get_client(
            "anthropic", api_key="k", base_url=server.base_url, cache=path, model="other"
        )
        other_model.chat(ask)
        assert server.request_count == 3


def test_rerunning_a_judge_pass_costs_no_calls(tmp_path: Path) -> None:
    results = [make_result(question_id=f"q{i}", prediction=f"Paris {i}") for i in range(12)]

    def grade(messages: list[ChatMessage]) -> str:
        return '{"label": "CORRECT"}'

    with FakeLLMServer(responder=grade, latency=0.01) as server:
        scores = []
        for _ in range(2):
            llm = get_client(
                "anthropic", api_key="k", base_url=server.base_url, cache=tmp_path / "c.sqlite"
            )
            scores.append(list(batch_judge(results, llm=llm, show_progress=False)))
        assert server.request_count == 12  # all from the first pass
    assert scores[0] == scores[1] == [1.0] * 12


def test_any_client_can_be_wrapped(tmp_path: Path) -> None:
    def reply(messages: Sequence[ChatMessage]) -> str:
        return "verdict " + messages[-1]["content"]

    scripted = ScriptedLLM(reply)
    cached = CachingClient(scripted, tmp_path / "c.sqlite")
    ask: list[ChatMessage] = [{"role": "user", "content": "x"}]
    assert asyncio.run(cached.achat(ask)).text == "verdict x"
    assert cached.chat(ask) == "verdict x"
    assert asyncio.run(cached.achat(ask)).text == "verdict x"
    assert len(scripted.calls) == 1
    assert (cached.cache_stats.hits, cached.cache_stats.misses) == (2, 1)
    assert cached.provider == scripted.provider
    assert cached.model == scripted.model


def test_threads_sharing_one_cache_lose_no_entry(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "c.sqlite")

    def write(worker: int) -> None:
        for i in range(50):
            key = f"{worker}-{i}"
            cache.put(key, Completion(key, i, worker, "m"))
            assert cache.get(key) is not None

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 400
    assert cache.stats.hits == 400


_WRITER = """
import sys
from himga.llm import Completion, LLMCache

path, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cache = LLMCache(path)
for i in range(count):
    cache.put(f"{worker}-{i}", Completion(f"text {worker} {i}", i, 1, "m"))
    cache.put("shared", Completion(f"from {worker}", 0, 0, "m"))
"""


def test_processes_writing_one_file_at_once_lose_no_entry(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    LLMCache(path).close()  # create the file before the writers race
    workers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, path, str(w), "40"]) for w in range(3)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    cache = LLMCache(path)
    assert len(cache) == 3 * 40 + 1
    assert all(cache.get(f"{w}-{i}") is not None for w in range(3) for i in range(40))


_KILLED_WRITER = """
import sys
from himga.llm import Completion, LLMCache

cache = LLMCache(sys.argv[1])
i = 0
while True:
    cache.put(f"key-{i}", Completion("x" * (i % 500), i, i, "m"))
    print(i, flush=True)  # only after the commit returned
    i += 1
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_mid_writes_leaves_every_committed_entry(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    committed = -1
    for line in writer.stdout:
        committed = int(line)
        if committed >= 150:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    cache = LLMCache(path)
    assert all(cache.get(f"key-{i}") is not None for i in range(committed + 1))
    assert cache.get("key-7") == Completion("x" * 7, 7, 7, "m")


def test_eval_llm_cache_makes_a_second_run_cost_no_calls(
    shared_datasets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    cache = tmp_path / "llm.sqlite"

    def answer(messages: list[ChatMessage]) -> str:
        return "CORRECT" if "label" in messages[-1]["content"] else "Paris"

    with FakeLLMServer(responder=answer) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        manifests = []
        for run in ("first", "second"):
            out = tmp_path / run
            argv = ["eval", "--memory", "bm25", "--llm", "anthropic", "--limit", "1"]
            argv += ["--llm-cache", str(cache), "--out", str(out), "--no-progress", "--no-judge"]
            assert main(argv) == 0
            manifests.append(json.loads((out / "manifest.json").read_text("utf-8")))
            if run == "first":
                first_requests = server.request_count
                server.reset_stats()
        assert server.request_count == 0
    first, second = (m["llm"]["cache"] for m in manifests)
    assert first["hits"] == 0
    assert first["misses"] == first_requests > 0
    assert second["hits"] == first_requests
    assert second["misses"] == 0
    assert manifests[1]["tokens"]["client_usage_this_invocation"]["calls"] == 0


def test_llm_cache_needs_llm(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["eval", "--llm-cache", str(tmp_path / "c.sqlite")]) == 2
    assert "--llm-cache needs --llm" in capsys.readouterr().err

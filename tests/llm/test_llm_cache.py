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
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga._cli import main
from himga.eval import batch_judge
from himga.llm import (
    CacheSchemaError,
    CachingClient,
    CachingLLMClient,
    ChatMessage,
    Completion,
    FakeLLMServer,
    LLMCache,
    LLMConfigError,
    cache_key,
    get_client,
)
from tests.cli_support import QUICK, offline_cli, run_cli
from tests.eval.test_eval_support import ScriptedLLM, make_result

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


class _TunedLLM(ScriptedLLM):
    """A scripted client that declares a sampling temperature and a default budget."""

    def __init__(self, temperature: float, max_tokens: int) -> None:
        super().__init__()
        self.temperature = temperature
        self.max_tokens = max_tokens


@pytest.mark.parametrize("other", [_TunedLLM(0.7, 64), _TunedLLM(0.0, 128), ScriptedLLM()])
def test_a_client_declaring_other_settings_misses_the_cache(
    tmp_path: Path, other: ScriptedLLM
) -> None:
    path = tmp_path / "c.sqlite"
    ask: list[ChatMessage] = [{"role": "user", "content": "x"}]
    CachingClient(_TunedLLM(0.0, 64), path).chat(ask)
    same = CachingClient(_TunedLLM(0.0, 64), path)
    same.chat(ask)
    assert (same.cache_stats.hits, same.cache_stats.misses) == (1, 0)
    cached = CachingClient(other, path)
    cached.chat(ask)
    assert (cached.cache_stats.hits, cached.cache_stats.misses) == (0, 1)


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


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.slow
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


def _snapshot(path: Path) -> tuple[bytes, str, list[str]]:
    """The file's bytes, its journal mode and its tables (read without writing)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
        tables = [n for (n,) in db.execute("SELECT name FROM sqlite_master ORDER BY name")]
    return path.read_bytes(), mode, tables


@pytest.mark.parametrize(
    "schema",
    [
        ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"],
        # Even a file that has a table of the cache's name beside its own.
        ["CREATE TABLE replies (x)", "CREATE TABLE accounts (id, balance)"],
        ["CREATE TABLE replies (x)"],  # and one that has only half of the cache's tables
    ],
)
def test_another_programs_sqlite_file_is_refused_and_left_unchanged(
    tmp_path: Path, schema: list[str]
) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db:
        for statement in schema:
            db.execute(statement)
        db.commit()
    before = _snapshot(path)
    with pytest.raises(CacheSchemaError, match=r"app\.db: not a himga LLM cache .*left unchanged"):
        LLMCache(path)
    assert _snapshot(path) == before
    assert before[1] == "delete"  # not switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal / -shm left


def test_a_foreign_file_is_an_llm_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(LLMConfigError):  # what himga eval reports as a one-line error
        get_client("openai", api_key="k", base_url="http://127.0.0.1:9/v1", cache=path)


def test_a_directory_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(CacheSchemaError, match="cannot open as an LLM cache"):
        LLMCache(tmp_path)


def test_an_existing_cache_reopens_with_its_entries(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    first = LLMCache(path)
    first.put("k", Completion("reply", 1, 2, "m"))
    first.close()
    again = LLMCache(path)
    assert again.get("k") == Completion("reply", 1, 2, "m")
    again.close()


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_forgotten_unusable_reply_is_asked_again_not_served_from_the_cache(
    tmp_path: Path, wrapped: bool
) -> None:
    """A judge reply naming no verdict, once forgotten, is not the answer of the re-run."""
    verdicts = iter(["I am not sure.", '{"label": "CORRECT"}'])
    path = tmp_path / "llm.sqlite"
    with FakeLLMServer(responder=lambda _: next(verdicts)) as server:

        def client() -> CachingLLMClient:
            url = server.openai_base_url
            if wrapped:
                return CachingClient(get_client("openai", api_key="k", base_url=url), path)
            return get_client("openai", api_key="k", base_url=url, cache=path)

        prompt: list[ChatMessage] = [{"role": "user", "content": "Gold answer: x"}]
        first = client()
        assert isinstance(first, CachingLLMClient)
        assert asyncio.run(first.achat(prompt, max_tokens=10)).text == "I am not sure."
        first.forget(prompt, max_tokens=10)  # what the judge does with an unusable reply
        again = client()
        assert asyncio.run(again.achat(prompt, max_tokens=10)).text == '{"label": "CORRECT"}'
        assert asyncio.run(again.achat(prompt, max_tokens=10)).text == '{"label": "CORRECT"}'
        assert server.request_count == 2  # the usable reply is cached as before


def test_forgetting_without_a_cache_does_nothing() -> None:
    client = get_client("openai", api_key="k", base_url="http://127.0.0.1:9/v1")
    client.forget([{"role": "user", "content": "x"}])
    assert client.cache_stats is None


def _foreign_schema(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, reply TEXT)")
        db.commit()


def _wrong_types(path: Path) -> None:
    LLMCache(path).close()
    with closing(sqlite3.connect(path)) as db:
        db.execute("INSERT INTO replies VALUES ('k', 'reply', 'many', 2, 'm')")
        db.commit()


def _corrupted(path: Path) -> None:
    cache = LLMCache(path)
    for i in range(300):
        cache.put(f"k{i}", Completion(f"reply {i} " * 60, 1, 2, "m"))
    cache.close()
    with path.open("r+b") as file:
        file.seek(len(path.read_bytes()) // 2)
        file.write(b"\xa5" * 8192)


@pytest.mark.parametrize("damage", [_foreign_schema, _wrong_types, _corrupted])
def test_a_damaged_or_foreign_cache_stops_the_run_before_it_starts(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    # Issue 34 (25): a corrupted or foreign-schema --llm-cache failed every question as
    # "LLM call failed after retries" (or with a TypeError traceback).
    cache = tmp_path / "llm.sqlite"
    damage(cache)
    before = cache.read_bytes()
    out = tmp_path / "run"
    with offline_cli(tmp_path):
        argv = ["eval", *QUICK, "--llm", "openai", "--llm-cache", str(cache), "--out", str(out)]
        code, err = run_cli(argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert f"{cache}: damaged or not a himga LLM cache" in err
    assert not (out / "checkpoint.jsonl").exists()
    assert cache.read_bytes() == before  # left as it was

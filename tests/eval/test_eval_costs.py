"""Cost per phase in a real run: ``himga eval --memory mem0 --memory-arg infer=true`` against
the loopback fake LLM counts exactly what the server received, per phase, across a resume."""

from __future__ import annotations

import errno
import io
import json
import socket
import threading
from pathlib import Path

import pytest

from himga._cli import main
from himga.benchmarks import load_dataset
from himga.eval import SEARCH_K, AgentSpec, RayExecutor, run_eval
from himga.eval._ray import _Worker
from himga.llm import ChatMessage, FakeLLMServer
from himga.metering import CallLog, CostSummary, PhaseCost, ProxyCall, RecordingProxy
from himga.runs import CostsInfo, Manifest, RunDir, render_report
from tests import cost_support
from tests.data_fixtures import read_run, write_json
from tests.fake_llm_support import point_at
from tests.integration_support import LOCOMO

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest.mark.slow
def test_mem0_infer_run_counts_what_the_server_received_per_phase_across_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    out = tmp_path / "run"
    with FakeLLMServer(responder=cost_support.respond) as server:
        point_at(server, "openai", monkeypatch)
        argv = [
            "eval",
            *("--dataset", "locomo", "--data-path", str(data), "--out", str(out)),
            *("--memory", "mem0", "--memory-arg", "infer=true", "--memory-arg", "embedder=hash"),
            *("--memory-arg", f"llm_base_url={server.openai_base_url}"),
            *("--llm", "openai", "--no-progress", "--no-preflight"),
        ]
        assert main(argv) == 0
        first = cost_support.received(server.requests)
        _, _, manifest = read_run(out)
        assert first == {"ingest": 6, "answering": 4, "judging": 4}
        assert (
            cost_support.calls_per_phase(manifest["costs"]) == first
        )  # retrieval: mem0 searches without its LLM
        assert manifest["costs"]["memory_endpoints"] == [server.openai_base_url]
        assert manifest["costs"]["answer_endpoint"] == server.openai_base_url
        assert manifest["llm"]["base_url"] == server.openai_base_url  # not the proxy's
        phases = {p["phase"]: p for p in manifest["costs"]["phases"]}
        assert phases["ingest"]["input_tokens"] == sum(
            sum(len(m["content"].split()) for m in r.messages)
            for r in server.requests
            if cost_support.phase_of(r.messages) == "ingest"
        )
        assert phases["ingest"]["errors"] == phases["ingest"]["unmetered"] == 0

        # Interrupted after one question: the resumed part ingests conv-b again (and
        # conv-a's second question makes it ingest conv-a too), answers and judges anew.
        checkpoint = out / "checkpoint.jsonl"
        lines = checkpoint.read_text("utf-8").splitlines(keepends=True)
        checkpoint.write_text("".join(lines[:2]), "utf-8")
        server.reset_stats()
        assert main([*argv, "--resume"]) == 0
        second = cost_support.received(server.requests)
    _, _, resumed = read_run(out)
    assert second["ingest"] == 6
    assert second["answering"] == 3
    both = {phase: first.get(phase, 0) + second.get(phase, 0) for phase in first}
    assert cost_support.calls_per_phase(resumed["costs"]) == both  # every part counted once
    lines = (out / "calls.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == sum(both.values())

    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    report = (out / "report.md").read_text("utf-8")
    assert f"| ingest | {both['ingest']} | 0 |" in report
    assert f"| answering | {both['answering']} | 0 |" in report
    assert f"| judging | {both['judging']} | 0 |" in report
    assert "through a loopback recording proxy" in report


def test_a_memory_without_an_endpoint_costs_nothing_and_says_so(
    data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    argv = ["eval", "--memory", "keyword", "--limit", "1", "--no-progress", "--no-preflight"]
    assert main([*argv, "--out", str(out)]) == 0
    _, _, manifest = read_run(out)
    assert manifest["costs"] == {
        "phases": [],
        "models": [],
        "memory_endpoints": [],
        "answer_endpoint": None,
        "judge_endpoint": None,
    }
    assert not (out / "calls.jsonl").read_text("utf-8")
    run = RunDir(out).read()
    text = render_report(run, "table", "figure")
    assert "declared no model endpoint" in text
    assert "No model call was made." in text


def test_old_manifests_without_costs_still_read(tmp_path: Path) -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "run_0_1_0_fake_llm" / "manifest.json"
    data = json.loads(fixture.read_text("utf-8"))
    assert "costs" not in data
    manifest = Manifest.from_dict(data)
    assert manifest.costs is None
    costs = CostsInfo(CostSummary.of([ProxyCall("ingest", "chat", "/v1/x?key=s", 200, 3, 1, 0.5)]))
    again = Manifest.from_dict(json.loads(json.dumps({**data, "costs": costs.to_dict()})))
    assert again.costs == costs
    assert again.costs.phases["ingest"] == PhaseCost("ingest", 1, 0, 3, 1, 0, 0.5)


@pytest.mark.slow
def test_merged_shards_sum_their_costs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    with FakeLLMServer(responder=cost_support.respond) as server:
        point_at(server, "openai", monkeypatch)
        argv = [
            "eval",
            *("--dataset", "locomo", "--data-path", str(data), "--no-progress", "--no-preflight"),
            *("--memory", "mem0", "--memory-arg", "infer=true", "--memory-arg", "embedder=hash"),
            *("--memory-arg", f"llm_base_url={server.openai_base_url}", "--llm", "openai"),
        ]
        shards = [str(tmp_path / f"s{index}") for index in range(2)]
        for index, shard in enumerate(shards):
            assert main([*argv, "--shard", f"{index + 1}/2", "--out", shard]) == 0
        received = cost_support.received(server.requests)
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    merged = RunDir(tmp_path / "merged").read().manifest.costs
    assert merged is not None
    assert cost_support.calls_per_phase(merged.to_dict()) == received
    parts = [RunDir(Path(shard)).read().manifest.costs for shard in shards]
    summed = CostSummary.summed(p.phases for p in parts if p is not None)
    # as written: the sum of the rounded seconds, rounded again
    assert merged.phases.to_json() == summed.to_json()
    lines = (tmp_path / "merged" / "calls.jsonl").read_text("utf-8").splitlines()
    calls = [ProxyCall.from_json(json.loads(line)) for line in lines]
    counted = CostSummary.summed(p.phases for p in parts if p is not None)
    # seconds are rounded per call in the file, per phase in the manifests
    assert [(c.phase, c.calls, c.input_tokens) for c in CostSummary.of(calls).phases] == [
        (c.phase, c.calls, c.input_tokens) for c in counted.phases
    ]


@pytest.mark.slow
def test_every_phase_of_the_memory_is_counted_preflight_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    out = tmp_path / "run"
    with FakeLLMServer() as server:
        argv = ["eval", "--dataset", "locomo", "--data-path", str(data), "--out", str(out)]
        argv += ["--memory", "tests.cost_memories:CallingMemory", "--no-progress"]
        argv += ["--memory-arg", f"llm_base_url={server.openai_base_url}"]
        assert main(argv) == 0
        received = server.request_count
    _, _, manifest = read_run(out)
    calls = cost_support.calls_per_phase(manifest["costs"])
    turns = sum(len(sample["conversation"]["session_1"]) for sample in LOCOMO)
    questions = sum(len(sample["qa"]) for sample in LOCOMO)
    assert calls["ingest"] == turns
    assert calls["retrieval"] == 2 * questions  # one retrieve and one search each
    assert calls["preflight"] == received - turns - 2 * questions > 0  # the kit's memories
    assert set(calls) == {"preflight", "ingest", "retrieval"}

    # himga compare shows each run's calls per phase beside the metrics
    keyword = tmp_path / "keyword"
    argv = ["eval", "--dataset", "locomo", "--data-path", str(data), "--memory", "keyword"]
    assert main([*argv, "--out", str(keyword), "--no-progress", "--no-preflight"]) == 0
    capsys.readouterr()
    assert main(["compare", str(keyword), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| run | preflight | ingest | retrieval |" in printed
    assert f"| `{keyword}` | 0 | 0 | 0 |" in printed
    ingest = manifest["costs"]["phases"][1]
    assert f"| {turns} ({ingest['input_tokens']:,} + {ingest['output_tokens']:,}) |" in printed


def test_a_memory_meter_is_refused_on_an_executor() -> None:
    # the workers' memories and their calls live elsewhere: no window here could count them
    with RecordingProxy("http://127.0.0.1:9") as proxy, pytest.raises(ValueError, match="meter"):
        run_eval([], agent=AgentSpec("keyword"), executor=RayExecutor(), memory_meter=proxy)


def _memory_phase(messages: list[ChatMessage]) -> str:
    """The phase of a request of the cost memories or of the answering client."""
    prompt = messages[-1]["content"]
    if prompt.endswith("Short answer:"):
        return "answering"
    return "ingest" if prompt.split()[0] in ("ingest", "extract") else "retrieval"


@pytest.mark.parametrize(
    ("memory", "arguments"),
    [
        ("tests.cost_memories:CallingMemory", {"llm_base_url": "{server}"}),  # an EndpointUser
        ("tests.cost_memories:AskingMemory", {}),  # an LLMUser
    ],
)
def test_a_metered_ray_worker_returns_each_samples_calls_per_phase_as_the_server_got_them(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memory: str,
    arguments: dict[str, str],
) -> None:
    # The body of a Ray actor, run here: what it returns is what the driver logs.
    samples = load_dataset("locomo", path=write_json(tmp_path / "locomo.json", LOCOMO))
    with FakeLLMServer() as server:
        point_at(server, "openai", monkeypatch)
        given = {
            name: value.format(server=server.openai_base_url) for name, value in arguments.items()
        }
        spec = AgentSpec(memory=memory, memory_arguments=given, llm="openai", model="m")
        worker = _Worker(spec, {"search_k": SEARCH_K}, None, None, metered=True)
        plain = _Worker(spec, {"search_k": SEARCH_K}, None, None)
        assert plain.identity() == worker.identity()  # the proxies change no identity
        for sample in samples:
            server.reset_stats()
            results, calls, done = worker.evaluate(sample)
            assert done.ingest_s > 0  # what the driver's progress weighs the sample's turns by
            counted: dict[str, int] = {}
            for request in server.requests:
                phase = _memory_phase(request.messages)
                counted[phase] = counted.get(phase, 0) + 1
            turns, questions = 3, len(sample.qa_pairs)
            retrieval = questions * (2 if "Calling" in memory else 1)  # CallingMemory searches too
            assert counted == {"ingest": turns, "retrieval": retrieval, "answering": questions}
            summary = CostSummary.of(ProxyCall.from_json(call) for call in calls)
            assert {c.phase: c.calls for c in summary.phases} == counted
            assert all(c.errors == c.unmetered == 0 for c in summary.phases)
            unmetered, none, _ = plain.evaluate(sample)
            assert none == []  # a worker not asked to meter collects nothing
            assert [r["prediction"] for r in unmetered] == [r["prediction"] for r in results]


def test_a_call_the_log_cannot_write_is_raised_on_the_run_thread_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "calls.jsonl"
    monkeypatch.setattr(Path, "open", lambda self, *args, **kwargs: Full())
    log = CallLog()
    log.open(path)
    call = ProxyCall("ingest", "chat", "/v1/chat/completions", 200, 3, 1, 0.5)
    worker = threading.Thread(target=log, args=(call,))
    worker.start()  # as a proxy's thread calls it: it must not raise there
    worker.join()
    with pytest.raises(OSError, match="No space left on device") as info:
        log.check()
    assert info.value.filename == str(path)  # the CLI's "cannot write <file>" names it


class _HungServer:
    """A loopback server that takes every connection and request and never answers."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(connection)

    def __enter__(self) -> _HungServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        for connection in self._held:
            connection.close()


def test_a_call_to_a_hung_upstream_is_counted_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34 (24): a call that timed out on a hung upstream was never recorded, so it
    # never appeared in the manifest's costs.
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    out = tmp_path / "run"
    with _HungServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        argv = ["eval", "--memory", "keyword", "--data-path", str(data), "--no-preflight"]
        argv += ["--no-progress"]
        argv += ["--llm", "openai", "--model", "m", "--no-judge", "--llm-timeout", "0.2"]
        argv += ["--llm-retries", "0", "--concurrency", "64", "--out", str(out)]
        assert main(argv) == 3
    manifest = RunDir(out).read().manifest
    answering = manifest.costs.phases["answering"] if manifest.costs else None
    questions = manifest.counts["errors"]
    assert questions > 0
    assert answering is not None
    assert answering.calls == answering.errors == questions

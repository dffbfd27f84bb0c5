"""The Ray executor on a loopback ``ray.cluster_utils.Cluster``: the local run's results, exactly.

One cluster serves the whole module (Ray costs seconds to start). It is made to
bind loopback only -- ``ray start`` and a default ``ray.init`` listen on the
machine's network address -- and the first test checks every listening socket
of its processes.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from himga._cli import main
from himga._extras import MissingExtraError
from himga.benchmarks import load_dataset
from himga.data import Sample
from himga.eval import (
    AgentSpec,
    RayClusterError,
    RayExecutor,
    WorkerStartError,
    compute_metrics,
    run_eval,
)
from himga.eval._ray import _ray
from himga.llm import ChatMessage, FakeLLMServer, RecordedRequest
from himga.runs import PER_RUN_FIELDS
from tests import cost_support
from tests.conftest import PROJECT_ROOT
from tests.data_fixtures import read_run, write_json
from tests.eval.test_eval_progress import keep_progress_models
from tests.integration_support import LOCOMO

# A Ray cluster of local processes, seconds to start, for any test of the module.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

TIMINGS = ("retrieval_latency_s", "latency_s")
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def _responder(messages: list[ChatMessage]) -> str:
    # Deterministic and context-dependent, so a wrong context changes the answer.
    prompt = messages[-1]["content"]
    return prompt.split("Question:")[-1].split()[0] if "Question:" in prompt else "no"


@pytest.fixture(scope="module")
def ray_llm() -> Iterator[FakeLLMServer]:
    """The fake LLM every Ray worker calls by default (``$OPENAI_BASE_URL``)."""
    with FakeLLMServer(responder=_responder) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(ray_llm: FakeLLMServer) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch:
        # Read when ray is imported and inherited by every Ray process: keep node
        # addresses on loopback (Ray's own single-machine mode), and do not ship
        # this checkout to the workers as a `uv run` environment.
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        patch.setenv("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        # Workers read the provider settings and the key from their own environment.
        patch.setenv("OPENAI_BASE_URL", ray_llm.openai_base_url)
        patch.setenv("OPENAI_API_KEY", "test-key")
        import ray
        from ray.cluster_utils import Cluster

        head = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 2, "include_dashboard": False},
        )
        ray.init(address=head.address, log_to_driver=False)
        try:
            yield head
        finally:
            ray.shutdown()
            head.shutdown()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="module")
def samples(shared_datasets: Path) -> list[Sample]:
    return load_dataset("locomo", path=shared_datasets / "locomo" / "locomo10.json", limit=2)


def _lines(results: Any) -> list[str]:
    return [json.dumps({k: v for k, v in r.to_dict().items() if k not in TIMINGS}) for r in results]


def _checkpoint(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *rest = (json.loads(line) for line in path.read_text("utf-8").splitlines())
    return header, rest


def _descendants() -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _listening(pids: set[int]) -> list[str]:
    """The local address of every listening TCP socket of ``pids`` (Linux /proc)."""
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(f) for f in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    addresses = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(fields[1].split(":")[0])
            # /proc stores each 32-bit word little-endian.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            ip = ipaddress.ip_address(words[: width // 2])
            addresses.append(str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip))
    return addresses


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_ray_matches_local_byte_for_byte_and_binds_loopback_only(
    cluster: Any, samples: list[Sample], tmp_path: Path
) -> None:
    spec = AgentSpec(memory="bm25", llm="openai", model="fake-model")
    local = run_eval(samples, agent=spec, show_progress=False, checkpoint=tmp_path / "local.jsonl")
    executor = RayExecutor(num_workers=2, llm_concurrency_total=8)
    remote = run_eval(
        samples,
        agent=spec,
        executor=executor,
        show_progress=False,
        checkpoint=tmp_path / "ray.jsonl",
    )
    listening = _listening(_descendants() | {os.getpid()})  # the driver serves too
    assert listening  # the cluster's servers were found
    assert set(listening) <= {"127.0.0.1", "::1"}, listening

    assert _lines(remote) == _lines(local)
    assert all(r.prediction for r in remote)
    assert compute_metrics(remote) == compute_metrics(local)
    local_header, local_lines = _checkpoint(tmp_path / "local.jsonl")
    ray_header, ray_lines = _checkpoint(tmp_path / "ray.jsonl")
    assert ray_header == local_header
    assert len(ray_lines) == len(local_lines)
    assert {(r["sample_id"], r["question_id"]) for r in ray_lines} == {r.key for r in local}


def test_the_driver_counts_each_returned_sample_s_turns_and_questions(
    cluster: Any, samples: list[Sample], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = keep_progress_models(monkeypatch)
    executor = RayExecutor(num_workers=2)
    run_eval(samples, agent=AgentSpec(memory="bm25"), executor=executor, show_progress=False)
    state = made[0].state()
    turns = sum(len(session.messages) for sample in samples for session in sample.sessions)
    assert (state.turns_done, state.turns_total) == (turns, turns)
    questions = sum(len(sample.qa_pairs) for sample in samples)
    assert (state.questions_done, state.questions_total) == (questions, questions)
    assert (state.fraction, state.eta_s) == (1.0, 0.0)


def test_workers_report_a_sample_s_turns_before_it_returns(
    cluster: Any, samples: list[Sample], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The memory holds its first retrieve until released: the sample is ingested, not done.
    made = keep_progress_models(monkeypatch)
    retrieving, release = tmp_path / "retrieving", tmp_path / "release"
    spec = AgentSpec(
        memory="tests.ray_memories:GatedMemory",
        memory_arguments={"retrieving": str(retrieving), "release": str(release)},
    )
    sample = samples[0]
    turns = sum(len(session.messages) for session in sample.sessions)
    finished: list[Any] = []
    runner = threading.Thread(
        target=lambda: finished.append(
            run_eval([sample], agent=spec, executor=RayExecutor(num_workers=1), show_progress=False)
        ),
        daemon=True,
    )
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while not (made and made[0].state().turns_done == turns) and time.monotonic() < deadline:
            time.sleep(0.05)
        state = made[0].state()
        assert retrieving.exists()
        assert (state.turns_done, state.questions_done) == (turns, 0)  # mid-sample, reported
        assert state.fraction is not None
        assert 0 < state.fraction < 1
    finally:
        release.touch()
        runner.join(timeout=120)
    final = made[0].state()
    assert len(finished) == 1
    assert len(finished[0]) == len(sample.qa_pairs)
    assert (final.turns_done, final.turns_total) == (turns, turns)  # counted once
    assert (final.questions_done, final.fraction) == (len(sample.qa_pairs), 1.0)


def test_an_actor_killed_mid_sample_loses_and_duplicates_nothing(
    cluster: Any, samples: list[Sample], tmp_path: Path
) -> None:
    armed = tmp_path / "crashed"
    spec = AgentSpec(
        memory="tests.ray_memories:CrashingMemory", memory_arguments={"armed": str(armed)}
    )
    armed.touch()  # the local reference run must not crash
    local = run_eval(samples, agent=spec, show_progress=False)
    armed.unlink()
    remote = run_eval(
        samples,
        agent=spec,
        executor=RayExecutor(num_workers=2, max_restarts=2, max_task_retries=2),
        show_progress=False,
        checkpoint=tmp_path / "ray.jsonl",
    )
    assert armed.exists()  # a worker did die mid-sample
    assert _lines(remote) == _lines(local)
    _, lines = _checkpoint(tmp_path / "ray.jsonl")
    keys = [(r["sample_id"], r["question_id"]) for r in lines]
    assert len(keys) == len(set(keys)) == len(local)


def test_a_sample_failing_after_the_retries_is_recorded_per_question_and_resumed(
    cluster: Any, samples: list[Sample], tmp_path: Path
) -> None:
    armed = tmp_path / "crashed"
    two = samples
    dying = AgentSpec(
        memory="tests.ray_memories:CrashingMemory",
        memory_arguments={"armed": str(armed), "always": True},
    )
    results = run_eval(
        two,
        agent=dying,
        executor=RayExecutor(num_workers=1, max_restarts=0, max_task_retries=0),
        show_progress=False,
        checkpoint=tmp_path / "ray.jsonl",
    )
    assert [r.key for r in results] == [
        (s.sample_id, q.question_id) for s in two for q in s.qa_pairs
    ]
    # The memory killed its worker: a memory error, not an LLM call that failed (issue 26).
    assert all(r.error is None for r in results)
    errors = [r.memory_error for r in results]
    assert all(e is not None and (e.method, e.type) == ("worker", "WorkerError") for e in errors)
    assert "after up to 0 restarts and 0 retries" in str(errors[0])
    counts = compute_metrics(results)["counts"]
    assert counts["memory_errors"] == len(results)
    assert counts["errors"] == 0
    # Errors are retried by a resumed run: with a memory that no longer dies, all succeed.
    healthy = dataclasses.replace(dying, memory_arguments={"armed": str(armed), "crash_at": 10**9})
    local = run_eval(two, agent=healthy, show_progress=False)
    resumed = run_eval(
        two,
        agent=healthy,
        executor=RayExecutor(num_workers=1),
        show_progress=False,
        checkpoint=tmp_path / "ray-healthy.jsonl",
    )
    assert _lines(resumed) == _lines(local)


def test_a_worker_with_another_identity_is_refused_before_any_work(
    cluster: Any, samples: list[Sample], tmp_path: Path
) -> None:
    spec = AgentSpec(memory="keyword")
    identity = dataclasses.replace(spec.run_identity(), memory_repr="KeywordMemory(k=11)")
    with pytest.raises(WorkerStartError, match=r"differs in memory_repr"):
        run_eval(
            samples[:1],
            agent=spec,
            executor=RayExecutor(num_workers=1),
            identity=identity,
            checkpoint=tmp_path / "never.jsonl",
        )
    assert not (tmp_path / "never.jsonl").exists()
    with pytest.raises(WorkerStartError, match="could not build the agent"):
        run_eval(
            samples[:1],
            agent=AgentSpec(memory="keyword", memory_arguments={"k": 0}),
            executor=RayExecutor(num_workers=1),
            show_progress=False,
        )


def test_himga_eval_ray_writes_the_local_run_directory(
    cluster: Any, shared_datasets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    base = ["eval", "--memory", "keyword", "--limit", "2", "--no-preflight", "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "local")]) == 0
    ray_args = ["--ray", cluster.address, "--workers", "2", "--worker-resource", "CPU=1"]
    # A process of its own: himga connects to the cluster (ray.init) and disconnects.
    command = [sys.executable, "-m", "himga", *base, *ray_args, "--out", str(tmp_path / "ray")]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    for name in ("results.jsonl",):
        local = (tmp_path / "local" / name).read_text("utf-8").splitlines()
        remote = (tmp_path / "ray" / name).read_text("utf-8").splitlines()
        strip = [{k: v for k, v in json.loads(x).items() if k not in TIMINGS} for x in local]
        assert [
            {k: v for k, v in json.loads(x).items() if k not in TIMINGS} for x in remote
        ] == strip
    assert (tmp_path / "ray" / "metrics.json").read_bytes() == (
        tmp_path / "local" / "metrics.json"
    ).read_bytes()
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("local", "ray")]
    assert manifests[0]["run_identity"] == manifests[1]["run_identity"]
    differing = {k for k in manifests[0] if manifests[0][k] != manifests[1][k]}
    assert differing <= {f.split(".")[0] for f in PER_RUN_FIELDS}


def test_with_an_llm_cache_a_rerun_on_ray_sends_no_request(
    cluster: Any, samples: list[Sample], tmp_path: Path
) -> None:
    with FakeLLMServer(responder=_responder) as server:
        settings = {"base_url": server.openai_base_url, "cache": str(tmp_path / "llm.sqlite")}
        spec = AgentSpec(memory="keyword", llm="openai", model="m", llm_settings=settings)
        runs = []
        for _ in range(2):
            before = server.request_count
            results = run_eval(
                samples[:1], agent=spec, executor=RayExecutor(num_workers=2), show_progress=False
            )
            runs.append((server.request_count - before, results))
    (first, cold), (second, warm) = runs
    assert first == len(cold) > 0  # one answer per question, none judged
    assert second == 0  # every worker answered from the shared cache file
    assert [r.prediction for r in warm] == [r.prediction for r in cold]


def test_himga_eval_ray_counts_per_phase_what_the_server_received_as_a_local_run_does(
    cluster: Any, ray_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mem0 with infer=true calls its own endpoint on every ingest: in the workers under --ray
    monkeypatch.setattr(ray_llm, "responder", cost_support.respond)
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    argv = [
        "eval",
        *("--dataset", "locomo", "--data-path", str(data), "--no-progress", "--no-preflight"),
        *("--memory", "mem0", "--memory-arg", "infer=true", "--memory-arg", "embedder=hash"),
        *("--memory-arg", f"llm_base_url={ray_llm.openai_base_url}", "--llm", "openai"),
    ]
    runs = {"local": [], "ray": ["--ray", cluster.address, "--workers", "2"]}
    manifests: dict[str, dict[str, Any]] = {}
    requests: dict[str, list[RecordedRequest]] = {}
    for name, where in runs.items():
        ray_llm.reset_stats()
        assert main([*argv, *where, "--out", str(tmp_path / name)]) == 0
        requests[name] = ray_llm.requests
        _, _, manifests[name] = read_run(tmp_path / name)
    received = cost_support.received(requests["ray"])
    assert received == cost_support.received(requests["local"])
    assert received == {"ingest": 6, "answering": 4, "judging": 4}
    costs = manifests["ray"]["costs"]
    assert costs is not None
    assert cost_support.calls_per_phase(costs) == received
    for phase in costs["phases"]:  # the fake server's tokens are the prompt's words
        assert phase["input_tokens"] == sum(
            sum(len(message["content"].split()) for message in request.messages)
            for request in requests["ray"]
            if cost_support.phase_of(request.messages) == phase["phase"]
        )
        assert phase["errors"] == phase["unmetered"] == 0
    local = manifests["local"]["costs"]
    assert [{**p, "seconds": 0} for p in costs["phases"]] == [
        {**p, "seconds": 0} for p in local["phases"]
    ]
    assert costs["memory_endpoints"] == local["memory_endpoints"] == [ray_llm.openai_base_url]
    assert costs["answer_endpoint"] == local["answer_endpoint"] == ray_llm.openai_base_url
    lines = (tmp_path / "ray" / "calls.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == sum(received.values())


def test_without_ray_installed_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError, match=r"himga\[ray\]"):
        _ray()


def test_more_workers_or_resources_than_the_cluster_has_are_refused_at_once(
    cluster: Any, samples: list[Sample]
) -> None:
    # The cluster has 2 CPUs and no GPU: Ray would keep such actors pending for ever.
    for executor, short in (
        (RayExecutor(num_workers=3), "3 x CPU=1 needs 3, it has 2"),
        (RayExecutor(num_workers=1, worker_resources={"GPU": 1}), "1 x GPU=1 needs 1, it has 0"),
    ):
        with pytest.raises(RayClusterError, match=re.escape(short)):
            run_eval(samples[:1], agent=AgentSpec(memory="keyword"), executor=executor)
    # Enough CPUs in all, but another job holds one: the second worker never starts.
    import ray

    remote: Any = ray.remote
    holder = remote(num_cpus=1)(_Holder).remote()
    try:
        ray.get(holder.ready.remote())
        with pytest.raises(
            WorkerStartError,
            match=r"did not start \(be placed and build the agent\) within 2 s: .* CPU=0 free",
        ):
            run_eval(
                samples[:1],
                agent=AgentSpec(memory="keyword"),
                executor=RayExecutor(num_workers=2, start_timeout=2),
            )
    finally:
        ray.kill(holder)


class _Holder:
    """An actor that only holds the CPU it reserved."""

    def ready(self) -> bool:
        return True


def _eval_command(tmp_path: Path, *argv: str) -> list[str]:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    return [
        *(sys.executable, "-m", "himga", "eval", "--dataset", "locomo", "--data-path", str(data)),
        *("--no-preflight", "--no-progress", "--out", str(tmp_path / "out"), *argv),
    ]


def test_an_unreachable_address_is_a_one_line_error_not_a_wait(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    command = _eval_command(tmp_path, "--memory", "keyword", "--ray", f"127.0.0.1:{port}")
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"himga eval: error: cannot reach the Ray cluster at '127.0.0.1:{port}': "
    )
    assert len(done.stderr.splitlines()) == 1


def test_ctrl_c_stops_a_ray_run_whose_memory_hangs(cluster: Any, tmp_path: Path) -> None:
    started = tmp_path / "started"
    command = _eval_command(
        tmp_path,
        *("--memory", "tests.ray_memories:HangingMemory", "--memory-arg", f"started={started}"),
        *("--ray", cluster.address, "--workers", "1"),
    )
    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)
    try:
        deadline = time.monotonic() + 90
        while not started.exists():  # a worker is inside the hanging ingest
            assert run.poll() is None, run.communicate()[1]
            assert time.monotonic() < deadline, "the worker never reached the memory"
            time.sleep(0.1)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130, stderr
    assert "himga eval: interrupted (Ctrl-C)" in stderr
    assert "Traceback" not in stderr

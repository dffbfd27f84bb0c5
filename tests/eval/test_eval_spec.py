"""AgentSpec: plain, picklable, keyless data that builds the agent and names the run identity."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from himga._cli import main
from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.eval import AgentSpec, AgentSpecError, RayExecutor, run_eval
from himga.memory import KeywordMemory

KEY = "sk-test-never-in-a-spec-1234"


def test_a_spec_is_plain_picklable_data_and_round_trips() -> None:
    spec = AgentSpec(
        memory="keyword",
        memory_arguments={"k": 5},
        llm="openai",
        model="m",
        llm_settings={"temperature": 0.0, "base_url": "http://127.0.0.1:1/v1"},
        max_tokens=64,
    )
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert AgentSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"llm": "openai", "llm_settings": {"api_key": KEY}}, "must not hold api_key"),
        ({"llm": "openai", "llm_settings": {"retries": 3}}, "unknown setting"),
        ({"model": "m"}, "need llm"),
        ({"memory_arguments": {"embedder": object()}}, "plain JSON data"),
        ({"memory": ""}, "memory spec"),
        ({"max_tokens": "128"}, "max_tokens"),
    ],
)
def test_a_spec_refuses_keys_unknown_settings_and_live_objects(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(AgentSpecError, match=message):
        AgentSpec(**{"memory": "keyword", **fields})  # type: ignore[arg-type]
    with pytest.raises(AgentSpecError, match="unknown AgentSpec field"):
        AgentSpec.from_dict({"memory": "keyword", "api_key": KEY})


def test_build_reads_the_key_from_the_environment_and_never_stores_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    spec = AgentSpec(memory="keyword", memory_arguments={"k": 5}, llm="openai", model="m")
    agent = spec.build()
    assert isinstance(agent, BaseAgent)
    assert isinstance(agent.memory, KeywordMemory)
    assert agent.memory.k == 5
    assert agent.llm is not None
    assert agent.llm.model == "m"
    assert KEY.encode() not in pickle.dumps(spec)
    assert KEY not in json.dumps(spec.run_identity(agent).to_dict())


def test_the_spec_identity_is_the_one_himga_eval_records(
    shared_datasets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    out = tmp_path / "run"
    argv = ["eval", "--memory", "keyword", "--memory-arg", "k=5", "--limit", "1"]
    assert main([*argv, "--no-preflight", "--no-progress", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    header = json.loads((out / "checkpoint.jsonl").read_text("utf-8").splitlines()[0])
    spec = AgentSpec(memory="keyword", memory_arguments={"k": 5})
    identity = spec.run_identity(dataset="locomo", dataset_sha256=manifest["dataset"]["sha256"])
    assert identity.fingerprint == manifest["run_identity"]
    assert identity.to_dict() == header["run"]


def test_run_eval_builds_a_spec_into_the_same_run(shared_datasets: Path, tmp_path: Path) -> None:
    samples = load_dataset("locomo", path=shared_datasets / "locomo" / "locomo10.json", limit=1)
    spec = AgentSpec(memory="keyword")
    from_spec = run_eval(samples, agent=spec, show_progress=False, checkpoint=tmp_path / "c")
    live = run_eval(samples, agent=spec.build(), show_progress=False)
    timings = ("retrieval_latency_s", "latency_s")

    def strip(results: list) -> list:  # type: ignore[type-arg]
        return [{k: v for k, v in r.to_dict().items() if k not in timings} for r in results]

    assert strip(from_spec) == strip(live)
    header = json.loads((tmp_path / "c").read_text("utf-8").splitlines()[0])
    assert header["run"] == spec.run_identity().to_dict()


def test_an_executor_needs_a_spec_and_sets_the_concurrency_itself() -> None:
    executor = RayExecutor(num_workers=1)
    with pytest.raises(TypeError, match="AgentSpec"):
        run_eval([], agent=BaseAgent(memory=KeywordMemory()), executor=executor)
    with pytest.raises(ValueError, match="llm_concurrency_total"):
        run_eval([], agent=AgentSpec(memory="keyword"), executor=executor, max_concurrency=4)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"num_workers": 0}, "num_workers"),
        ({"max_restarts": -1}, "bounded"),
        ({"num_workers": 4, "llm_concurrency_total": 3}, "without an LLM call"),
        ({"worker_resources": {"GPU": -1}}, "worker_resources"),
    ],
)
def test_ray_executor_settings_are_checked_without_ray(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RayExecutor(**fields)  # type: ignore[arg-type]

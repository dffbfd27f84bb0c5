"""The benchmark registry: a benchmark defined outside himga (tests/external_benchmark.py)
runs end to end through ``himga eval`` and ``himga report``, registered by an entry point
or by ``register_benchmark``; LoCoMo and LongMemEval are registrations like it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from himga._cli import main
from himga.agent import BaseAgent
from himga.benchmarks import (
    Benchmark,
    BenchmarkLoadError,
    UnknownDatasetError,
    _registry,
    benchmark_from_spec,
    find_benchmark,
    get_benchmark,
    load_dataset,
    register_benchmark,
    resolve_dataset,
)
from himga.data import DatasetNotFoundError
from himga.eval import compute_metrics, format_table, get_metric, run_eval
from himga.llm import ChatMessage, FakeLLMServer
from himga.memory import BM25Memory
from tests.data_fixtures import read_run
from tests.eval.test_eval_support import make_result
from tests.external_benchmark import PROMPT, ToyQA, write_toyqa
from tests.plugin_support import install_plugin, plugin_site


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plugin_site(tmp_path, monkeypatch)


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if prompt.endswith("Reply MATCH or MISS."):
        response = prompt.split("Response: ")[1].split("\n")[0]
        gold = prompt.split("Gold answer: ")[1].split("\n")[0]
        return "MATCH" if gold.lower() in response.lower() else "MISS"
    return "Paris" if "fly" in prompt else "I do not know"


@pytest.mark.slow
def test_an_entry_point_benchmark_runs_through_eval_and_report(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "toyqa = tests.external_benchmark:benchmarks")
    data = write_toyqa(tmp_path / "data" / "toyqa" / "toyqa.json")
    monkeypatch.setenv("HIMGA_DATA_DIR", str(tmp_path / "data"))
    assert get_benchmark("toyqa-mini").description == "ToyQA under a second name"
    assert resolve_dataset("toyqa").path == data
    out = tmp_path / "run"
    argv = ["eval", "--dataset", "toyqa", "--llm", "openai", "--model", "fake"]
    with FakeLLMServer(responder=_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    table = capsys.readouterr().out
    results, metrics, manifest = read_run(out)

    # the benchmark's categories, gold, judge and metrics, through the generic code
    assert [r["category"] for r in results] == ["recall", "recall", "trap", "recall"]
    assert results[0]["gold"] == {"keywords": ["Paris"]}
    assert results[2]["gold"] == {"keywords": []}
    assert [r["judge"] for r in results] == [1.0, 0.0, 0.0, 0.0]
    assert list(metrics["by_category"]) == ["recall", "trap"]
    assert metrics["overall"]["questions"] == 3  # the trap question is out of the headline
    assert metrics["overall_with_adversarial"]["questions"] == 4
    assert metrics["overall"]["judge"] == pytest.approx(1 / 3)
    assert metrics["by_category"]["recall"]["keyword_hit"] == pytest.approx(1 / 3)
    assert metrics["by_category"]["trap"]["keyword_hit"] is None  # no keywords: not scored
    assert metrics["toyqa_summary"] == {"dialogues": 2, "questions": 4}
    assert metrics["overall"]["recall@1"] is not None  # bm25 ranks: the built-ins apply
    digest = hashlib.sha256(PROMPT.encode("utf-8")).hexdigest()
    assert manifest["prompt_hashes"]["judge"] == {"toyqa-match": digest}
    assert manifest["dataset"]["name"] == "toyqa"
    assert "overall (no trap)" in table
    assert "KW" in table

    assert main(["report", str(out)]) == 0
    report = (out / "report.md").read_text("utf-8")
    assert "overall (no trap)" in report
    assert "KW" in report


def test_register_benchmark_makes_it_loadable_and_evaluable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This test's registration must not leak into the other tests of the process.
    monkeypatch.setattr(_registry._benchmarks.registered, "entries", {})
    toy: Benchmark = ToyQA(name="toyqa-registered")
    register_benchmark(toy, replace=True)
    with pytest.raises(BenchmarkLoadError, match="already registered"):
        register_benchmark(ToyQA(name="toyqa-registered"))
    assert get_benchmark("toyqa-registered") is toy
    assert find_benchmark("toyqa-registered+shuffled") is toy
    assert find_benchmark("toyqa-nope") is None
    with pytest.raises(DatasetNotFoundError, match=r"write toyqa\.json"):
        resolve_dataset("toyqa-registered", path=tmp_path)
    path = write_toyqa(tmp_path / "toyqa.json")
    samples = load_dataset("toyqa-registered", path=path, ids=["d2"])
    assert [s.dataset for s in samples] == ["toyqa-registered"]
    results = run_eval(samples, agent=BaseAgent(memory=BM25Memory(), llm=None), show_progress=False)
    metrics = compute_metrics(results)
    assert list(metrics["by_category"]) == ["recall"]
    assert metrics["by_category"]["recall"]["keyword_hit"] is None  # offline: no answer
    assert "overall (no trap)" in format_table(metrics, dataset="toyqa-registered")
    assert get_metric("KW").name == "keyword_hit"


def test_gold_is_written_only_when_there_is_some() -> None:
    assert "gold" not in make_result().to_dict()  # so LoCoMo's results.jsonl is unchanged
    with_gold = make_result(gold={"cue": "the red door"})
    assert with_gold.to_dict()["gold"] == {"cue": "the red door"}
    assert type(with_gold).from_dict(with_gold.to_dict()) == with_gold


def test_register_benchmark_refuses_what_is_not_a_benchmark() -> None:
    with pytest.raises(TypeError, match="not a Benchmark"):
        register_benchmark(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Benchmark"):
        register_benchmark(ToyQA)  # type: ignore[arg-type]  # the class, not an instance


def test_unknown_names_list_the_known_benchmarks() -> None:
    with pytest.raises(UnknownDatasetError, match=r"known: (.*, )?locomo, (.*, )?longmemeval_s"):
        get_benchmark("nope")


def test_the_builtin_benchmarks_are_registrations() -> None:
    locomo = get_benchmark("locomo")
    assert list(locomo.categories)[-1] == "adversarial"
    assert locomo.headline_excludes == frozenset({"adversarial"})
    assert locomo.judge is not None
    assert "locomo" in locomo.judge.prompts
    lme = get_benchmark("longmemeval_oracle")
    assert lme.headline_excludes == frozenset()
    assert find_benchmark("longmemeval_oracle+distractors") is lme
    assert [m.name for m in lme.metrics] == ["longmemeval_retrieval"]


def test_a_module_attr_dataset_runs_through_eval_like_a_module_attr_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--dataset module:attr`` (issue 35): the benchmark is loaded as a plug-in is,
    registered under its own name, and the run is of that name; the spec is kept in the
    manifest's arguments. A spec giving several benchmarks, or none, is refused."""
    monkeypatch.setattr(_registry._benchmarks.registered, "entries", {})
    monkeypatch.setattr(_registry, "_from_specs", {})
    data = write_toyqa(tmp_path / "toyqa.json")
    out = tmp_path / "run"
    spec = "tests.external_benchmark:ToyQA"
    argv = ["eval", "--dataset", spec, "--data-path", str(data), "--memory", "bm25"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    assert "overall (no trap)" in capsys.readouterr().out
    results, metrics, manifest = read_run(out)
    assert {r["dataset"] for r in results} == {"toyqa"}
    assert manifest["dataset"]["name"] == "toyqa"
    assert manifest["arguments"]["dataset"] == spec
    assert list(metrics["by_category"]) == ["recall", "trap"]
    assert benchmark_from_spec(spec) is get_benchmark("toyqa")  # loaded once a process
    assert main([*argv, "--out", str(out), "--resume", "--no-progress"]) == 0

    with pytest.raises(BenchmarkLoadError, match=r"gives 2 benchmarks \('toyqa', 'toyqa-mini'\)"):
        benchmark_from_spec("tests.external_benchmark:benchmarks")
    with pytest.raises(BenchmarkLoadError, match="malformed dataset spec"):
        benchmark_from_spec("tests.external_benchmark:")
    code = main(["eval", "--dataset", "tests.no_such_module:X", "--no-progress"])
    assert code == 2
    assert "dataset spec 'tests.no_such_module:X'" in capsys.readouterr().err

"""Benchmark plug-ins load lazily and in isolation: a broken one (it fails to import,
exits, hangs, gives the wrong type, claims a taken name, or its methods misbehave) is
named in one line, and the rest of himga keeps working."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from threading import Thread

import pytest

from himga._cli import main
from himga.benchmarks import (
    Benchmark,
    BenchmarkLoadError,
    BenchmarkPluginWarning,
    JudgeRequest,
    UnknownDatasetError,
    _registry,
    benchmarks,
    find_benchmark,
    get_benchmark,
    load_dataset,
    resolve_dataset,
)
from himga.data import Sample
from himga.eval import (
    EvalResult,
    Metric,
    available_metrics,
    get_metric,
    metrics_of,
    register_metric,
)
from himga.llm import FakeLLMServer
from tests.data_fixtures import read_run
from tests.external_benchmark import ToyJudge, ToyQA, write_toyqa
from tests.plugin_support import PLUGIN, install_plugin, plugin_module, plugin_site


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plugin_site(tmp_path, monkeypatch)


# -- what the entry points of tests below name --------------------------------------


def returns_none() -> None:
    return None


def returns_42() -> int:
    return 42


def returns_dict() -> dict[str, ToyQA]:
    return {"toyqa": ToyQA()}


def exits() -> ToyQA:
    sys.exit(3)


def non_string_name() -> ToyQA:
    return ToyQA(name=42)  # type: ignore[arg-type]


def shadows_locomo() -> tuple[ToyQA, ToyQA]:
    return ToyQA(name="locomo"), ToyQA(name="toyqa-ok")


def categories_not_strings() -> ToyQA:
    return ToyQA(categories=(1, 2))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Misbehaving(ToyQA):
    """ToyQA whose ``how`` method misbehaves."""

    how: str = ""

    def locate(self, directory: Path) -> Path | None:
        if self.how == "locate raises":
            raise KeyError("no index")
        if self.how == "locate returns a str":
            return str(directory)  # type: ignore[return-value]
        return super().locate(directory)

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        if self.how == "load exits":
            sys.exit(4)
        if self.how == "load yields 42":
            return iter([42])  # type: ignore[list-item]
        if self.how == "load returns None":
            return None  # type: ignore[return-value]
        if self.how == "load yields nothing":
            return iter(())
        return super().load(path, wanted)


def misbehaving() -> list[Misbehaving]:
    hows = ("locate raises", "locate returns a str", "load exits", "load yields 42")
    return [
        Misbehaving(name=how.replace(" ", "-"), how=how)
        for how in (*hows, "load returns None", "load yields nothing")
    ]


def _score(result: object, judge: float | None) -> float | None:
    return None


LIKE_R10 = Metric("my_recall", "r@10", "ranking", _score)


def titled_like_r10() -> ToyQA:
    return ToyQA(name="toyqa-r10", metrics=(LIKE_R10,))


# -- tests -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tests.no_such_module:benchmarks", "No module named 'tests.no_such_module'"),
        ("tests.benchmarks.test_benchmarks_plugins:returns_none", "returned None, not a Benchmark"),
        ("tests.benchmarks.test_benchmarks_plugins:returns_42", "returned 42, not a Benchmark"),
        ("tests.benchmarks.test_benchmarks_plugins:returns_dict", "returned {'toyqa'"),
        ("tests.benchmarks.test_benchmarks_plugins:exits", r"called sys\.exit\(3\)"),
        ("tests.benchmarks.test_benchmarks_plugins:non_string_name", "name 42 is not a string"),
        (
            "tests.benchmarks.test_benchmarks_plugins:categories_not_strings",
            "categories .* sequence of str",
        ),
    ],
)
def test_a_broken_plugin_is_named_when_used_and_listed_and_the_rest_works(
    site: Path, value: str, message: str
) -> None:
    install_plugin(site, f"toyqa = {value}")
    assert get_benchmark("locomo").name == "locomo"  # a built-in: no plug-in is loaded
    with pytest.raises(BenchmarkLoadError, match=message) as used:
        get_benchmark("toyqa")
    assert "'toyqa'" in str(used.value)
    assert PLUGIN in str(used.value)
    assert "\n" not in str(used.value)
    with pytest.warns(BenchmarkPluginWarning, match=message):
        listed = benchmarks()
    assert "locomo" in listed
    assert "toyqa" not in listed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        benchmarks()  # said once
    assert find_benchmark("locomo+x") is get_benchmark("locomo")


def test_a_plugin_is_imported_only_when_a_name_beyond_the_builtins_is_asked(site: Path) -> None:
    install_plugin(site, f"toyqa = {plugin_module(site)}:BENCHMARK", "raise RuntimeError('boom')\n")
    get_benchmark("beam-100k")
    find_benchmark("longmemeval_s")
    assert plugin_module(site) not in sys.modules
    with (
        pytest.warns(BenchmarkPluginWarning, match="RuntimeError: boom"),
        pytest.raises(
            UnknownDatasetError, match=r"known: .*locomo.*broken plug-ins skipped: 'toyqa'"
        ),
    ):
        get_benchmark("nope")


def test_a_plugin_that_exits_while_imported_is_named(site: Path) -> None:
    install_plugin(
        site, f"toyqa = {plugin_module(site)}:BENCHMARK", "import sys\nsys.exit('bye')\n"
    )
    with pytest.raises(BenchmarkLoadError, match=r"cannot load .*'toyqa'.*sys\.exit\('bye'\)"):
        get_benchmark("toyqa")


def test_a_plugin_whose_import_hangs_is_given_up_after_the_timeout(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_registry, "PLUGIN_LOAD_TIMEOUT", 0.3)
    install_plugin(site, f"toyqa = {plugin_module(site)}:BENCHMARK", "import time\ntime.sleep(3)\n")
    started = time.monotonic()
    with pytest.raises(BenchmarkLoadError, match=r"did not finish loading within 0\.3 s"):
        get_benchmark("toyqa")
    assert time.monotonic() - started < 2
    assert get_benchmark("locomo").name == "locomo"


def test_a_name_of_a_builtin_or_claimed_twice_is_refused_naming_both(site: Path) -> None:
    install_plugin(site, "mine = tests.benchmarks.test_benchmarks_plugins:shadows_locomo")
    install_plugin(site, "toyqa = tests.external_benchmark:benchmarks", dist="other-plugin")
    install_plugin(site, "again = tests.external_benchmark:ToyQA", dist="third-plugin")
    assert get_benchmark("locomo") is _registry._builtin()["locomo"].value
    assert get_benchmark("toyqa-ok").name == "toyqa-ok"  # the plug-in's other benchmark
    assert get_benchmark("toyqa-mini").name == "toyqa-mini"
    with pytest.warns(BenchmarkPluginWarning) as listed:
        benchmarks()
    said = [str(w.message) for w in listed]
    assert any("'mine'" in line and "'locomo' is refused: it is himga's built-in" in line
               for line in said)  # fmt: skip
    with pytest.raises(
        BenchmarkLoadError,
        match=r"'toyqa' is registered twice: by .*'other-plugin'.*'third-plugin'",
    ):
        get_benchmark("toyqa")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("locate-raises", r"locate raised KeyError: 'no index'"),
        ("locate-returns-a-str", r"locate returned '.*', not a Path or None"),
        ("load-exits", r"load called sys\.exit\(4\)"),
        ("load-yields-42", r"load yielded 42, not a Sample"),
        ("load-returns-None", r"load returned None, not an iterator of Samples"),
        ("load-yields-nothing", r"load yielded no sample from .*toyqa\.json"),
    ],
)
def test_a_plugin_method_that_misbehaves_is_an_error_naming_plugin_and_method(
    site: Path, tmp_path: Path, name: str, message: str
) -> None:
    install_plugin(site, "mis = tests.benchmarks.test_benchmarks_plugins:misbehaving")
    data = write_toyqa(tmp_path / "data" / "toyqa.json")
    with pytest.raises(BenchmarkLoadError, match=rf"entry point 'mis' .* of '{PLUGIN}': {message}"):
        load_dataset(name, path=resolve_dataset(name, path=data.parent).path)


def test_eval_of_a_plugin_whose_load_exits_is_one_line_naming_it(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "mis = tests.benchmarks.test_benchmarks_plugins:misbehaving")
    data = write_toyqa(tmp_path / "toyqa.json")
    argv = ["eval", "--dataset", "load-exits", "--data-path", str(data), "--no-preflight"]
    assert main([*argv, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"of '{PLUGIN}': load called sys.exit(4)" in err[0]
    assert "memory" not in err[0]


@pytest.mark.integration
def test_version_loads_no_plugin(site: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    module = f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(60)\n"
    install_plugin(site, f"toyqa = {plugin_module(site)}:BENCHMARK", module)
    done = subprocess.run(
        [sys.executable, "-m", "himga", "--version"],
        env={"PYTHONPATH": str(site), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("himga ")
    assert not marker.exists()


def test_datasets_lists_the_rest_and_names_the_broken_plugin_in_one_line(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "toyqa = tests.benchmarks.test_benchmarks_plugins:returns_42")
    assert main(["datasets", "--no-stats", "locomo"]) == 0
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(
        "himga: BenchmarkPluginWarning: skipped: benchmark entry point 'toyqa' "
        f"(tests.benchmarks.test_benchmarks_plugins:returns_42) of '{PLUGIN}': "
    )
    assert "returned 42, not a Benchmark" in err


def test_a_metric_titled_like_another_or_of_an_unknown_kind_is_refused(site: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown kind needs='recall'"):
        Metric("mine", "mine", "recall", _score)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"titled 'r@10' like metric 'recall@10'"):
        register_metric(LIKE_R10)
    install_plugin(site, "toyqa = tests.benchmarks.test_benchmarks_plugins:titled_like_r10")
    with pytest.raises(BenchmarkLoadError, match=r"'toyqa-r10': metric 'my_recall' .* 'recall@10'"):
        metrics_of("toyqa-r10")
    with pytest.warns(BenchmarkPluginWarning, match="my_recall"):
        assert "my_recall" not in available_metrics()
    assert get_metric("R@10").name == "recall@10"


def not_a_metric() -> ToyQA:
    return ToyQA(name="toyqa-bad-metric", metrics=("recall",))  # type: ignore[arg-type]


def test_eval_of_a_benchmark_whose_metrics_are_refused_stops_before_it_starts(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(site, "toyqa = tests.benchmarks.test_benchmarks_plugins:not_a_metric")
    data = write_toyqa(tmp_path / "toyqa.json")
    out = tmp_path / "run"
    argv = ["eval", "--dataset", "toyqa-bad-metric", "--data-path", str(data), "--no-preflight"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "benchmark 'toyqa-bad-metric': metric 'recall' is not a Metric or RunMetric" in err
    assert not out.exists()  # nothing run, nothing written


DERIVING = """
from dataclasses import replace
from himga.benchmarks import get_benchmark, register_benchmark
from tests.external_benchmark import ToyQA

BASE = get_benchmark("locomo")  # a plug-in derived from a built-in
DERIVED = replace(ToyQA(), name="locomo-derived", categories=BASE.categories)
register_benchmark(ToyQA(name="self-registered"))
"""


def test_a_plugin_may_look_up_and_register_benchmarks_while_it_loads(site: Path) -> None:
    install_plugin(site, f"derived = {plugin_module(site)}:DERIVED", DERIVING)
    found: list[Benchmark] = []
    # On a thread: a registry that waits on itself would hang the test, not fail it.
    looking = Thread(target=lambda: found.append(get_benchmark("locomo-derived")), daemon=True)
    looking.start()
    looking.join(10)
    assert [benchmark.name for benchmark in found] == ["locomo-derived"]
    assert get_benchmark("self-registered").name == "self-registered"


class BrokenJudge(ToyJudge):
    """A plug-in judge that fails on every question."""

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        raise KeyError("rubric")


def broken_judge() -> ToyQA:
    return ToyQA(name="toyqa-broken-judge", judge=BrokenJudge())


@pytest.mark.slow
def test_a_plugin_judge_that_raises_fails_its_questions_not_the_run(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(site, "toyqa = tests.benchmarks.test_benchmarks_plugins:broken_judge")
    data = write_toyqa(tmp_path / "toyqa.json")
    out = tmp_path / "run"
    argv = ["eval", "--dataset", "toyqa-broken-judge", "--data-path", str(data), "--no-preflight"]
    with FakeLLMServer(responder=lambda messages: "Paris") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        llm = ["--llm", "openai", "--model", "fake"]
        assert main([*argv, *llm, "--out", str(out), "--no-progress"]) == 3  # incomplete
    results, _, _ = read_run(out)
    assert len(results) == 4
    assert all(
        r["judge_error"] == "judge of 'toyqa-broken-judge' failed: KeyError: 'rubric'"
        for r in results
    )

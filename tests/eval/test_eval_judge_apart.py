"""A judge apart from the answerer (``--judge-llm``, ``--judge-model``, ``--judge-base-url``):
its requests go to its own server only, the run identity and manifest name both models,
costs are counted per model, a resume with another judge is refused, and ``himga compare``
warns when two runs were judged differently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from himga._cli import main
from himga.eval.judge import offline_judge_responder
from himga.llm import FakeLLMServer
from himga.metering import CostSummary, ProxyCall
from tests.data_fixtures import read_run, write_json
from tests.fake_llm_support import point_at
from tests.integration_support import LOCOMO

pytestmark = pytest.mark.usefixtures("loopback_only")


def _eval(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        *("--dataset", "locomo", "--data-path", str(data), "--out", str(out)),
        *("--llm", "openai", "--model", "answerer", "--no-progress", "--no-preflight"),
        *extra,
    ]


@pytest.mark.slow
def test_the_judge_apart_gets_every_judge_request_and_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    apart, same = tmp_path / "apart", tmp_path / "same"
    with (
        FakeLLMServer(responder=offline_judge_responder) as answerer,
        FakeLLMServer(responder=offline_judge_responder) as judge,
    ):
        point_at(answerer, "openai", monkeypatch)
        judge_options = ("--judge-model", "judge-m", "--judge-base-url", judge.openai_base_url)
        assert main(_eval(data, apart, *judge_options)) == 0
        assert answerer.request_count == 4
        assert judge.request_count == 4
        assert {r.body["model"] for r in answerer.requests} == {"answerer"}
        assert {r.body["model"] for r in judge.requests} == {"judge-m"}
        assert all("Generated answer:" in r.messages[-1]["content"] for r in judge.requests)
        assert not any("Generated answer:" in r.messages[-1]["content"] for r in answerer.requests)

        _, metrics, manifest = read_run(apart)
        assert metrics["counts"]["judged"] == 4
        assert manifest["llm"]["model"] == "answerer"
        assert manifest["judge"]["model"] == "judge-m"
        assert manifest["judge"]["base_url"] == judge.openai_base_url
        assert manifest["judge"]["apart"] is True
        costs = manifest["costs"]
        assert costs["answer_endpoint"] == answerer.openai_base_url
        assert costs["judge_endpoint"] == judge.openai_base_url
        per_model = {(m["phase"], m["model"]): m["calls"] for m in costs["models"]}
        assert per_model == {("answering", "answerer"): 4, ("judging", "judge-m"): 4}
        header = json.loads((apart / "checkpoint.jsonl").read_text("utf-8").splitlines()[0])
        assert header["run"]["answer"]["model"] == "answerer"
        assert header["run"]["judge"]["model"] == "judge-m"

        # The same run resumed with another judge is refused, in one line naming it.
        other = ("--judge-model", "judge-2", "--judge-base-url", judge.openai_base_url)
        capsys.readouterr()
        assert main([*_eval(data, apart, *other), "--resume"]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1
        assert 'judge.model: "judge-m" != "judge-2"' in error
        assert judge.request_count == 4  # nothing was asked
        # With the same judge it resumes and asks nothing.
        assert main([*_eval(data, apart, *judge_options), "--resume"]) == 0
        assert (answerer.request_count, judge.request_count) == (4, 4)

        # Default: the answerer judges, as before.
        assert main(_eval(data, same)) == 0
        assert judge.request_count == 4
        assert answerer.request_count == 4 + 8  # its answers and their verdicts
        _, _, default = read_run(same)
        assert default["judge"]["model"] == "answerer"
        assert default["judge"]["apart"] is False
        assert default["costs"]["judge_endpoint"] is None
        judge_url = judge.openai_base_url

    assert main(["report", str(apart)]) == 0
    report = (apart / "report.md").read_text("utf-8")
    assert f"verdicts to the judge apart at {judge_url}" in report
    assert "| judging | judge-m | 4 |" in report
    assert "| answering | answerer | 4 |" in report

    capsys.readouterr()
    assert main(["compare", str(same), str(apart), "--metric", "judge"]) == 0
    printed = capsys.readouterr()
    warning = (
        f"judged differently: `{same}` by openai/answerer, `{apart}` by openai/judge-m (model "
        "differ); their judge scores are not comparable"
    )
    assert f"himga compare: warning: {warning}\n" in printed.err
    assert f"**Warning: {warning}.**" in printed.out


def test_another_provider_judges_from_its_own_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    with (
        FakeLLMServer(responder=offline_judge_responder) as answerer,
        FakeLLMServer(responder=offline_judge_responder) as judge,
    ):
        point_at(answerer, "openai", monkeypatch)
        point_at(judge, "anthropic", monkeypatch)
        out = tmp_path / "run"
        assert main(_eval(data, out, "--judge-llm", "anthropic", "--judge-model", "j")) == 0
        assert [r.api for r in judge.requests] == ["anthropic"] * 4
        assert answerer.request_count == 4
    _, _, manifest = read_run(out)
    assert (manifest["judge"]["provider"], manifest["judge"]["model"]) == ("anthropic", "j")
    assert (manifest["llm"]["provider"], manifest["llm"]["model"]) == ("openai", "answerer")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--judge-model", "j"), "--judge-model needs --llm"),
        (("--llm", "openai", "--no-judge", "--judge-llm", "openai"), "--judge-llm contradicts"),
        (
            ("--llm", "openai", "--judge-base-url", "localhost:9"),
            "--judge-base-url must be an http:// or https:// URL, got 'localhost:9'",
        ),
    ],
)
def test_judge_options_without_a_judging_run_are_usage_errors(
    extra: tuple[str, ...], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", *extra]) == 2
    assert capsys.readouterr().err.startswith(f"himga eval: {expected}")


def test_an_unknown_judge_provider_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert main(_eval(data, tmp_path / "r", "--judge-llm", "nope")) == 2
    error = capsys.readouterr().err
    assert error.startswith("himga eval: error: unknown LLM provider 'nope'")
    assert error.count("\n") == 1


def test_costs_per_model_sum_across_parts_and_old_records_read() -> None:
    calls = [
        ProxyCall("answering", "chat", "/v1/chat/completions", 200, 10, 2, 0.1, "a"),
        ProxyCall("judging", "chat", "/v1/chat/completions", 200, 30, 1, 0.2, "j"),
        ProxyCall("judging", "chat", "/v1/chat/completions", 500, None, None, 0.1, "j"),
    ]
    part = CostSummary.of(calls)
    assert [(m.phase, m.model, m.calls) for m in part.models] == [
        ("answering", "a", 1),
        ("judging", "j", 2),
    ]
    whole = CostSummary.summed([part, part])
    assert [(m.phase, m.model, m.calls, m.errors) for m in whole.models] == [
        ("answering", "a", 2, 0),
        ("judging", "j", 4, 2),
    ]
    again = CostSummary.from_json(whole.to_json(), whole.models_json())
    assert again.models_json() == whole.models_json()
    # A call recorded before models were names none; its line still reads.
    old = {k: v for k, v in calls[0].to_json().items() if k != "model"}
    assert ProxyCall.from_json(old).model is None

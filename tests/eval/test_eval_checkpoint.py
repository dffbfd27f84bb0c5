"""The JSONL checkpoint: resume, retry of errors, torn lines, and a real kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.agent import BaseAgent
from himga.data.schema import Message, Session
from himga.eval import CheckpointError, CheckpointMismatchError, EvalResult, run_eval
from himga.eval._checkpoint import Checkpoint
from himga.memory import NullMemory
from tests.eval.test_eval_support import RecordingMemory, ScriptedLLM, make_result, make_sample

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _keys(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["himga_checkpoint"] == 2
    return [(r["sample_id"], r["question_id"]) for r in map(json.loads, lines[1:])]


def test_rerun_skips_finished_questions_and_retries_errors(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=4), make_sample("b", questions=4)]
    flaky = ScriptedLLM(fail=lambda prompt: "topic1x2" in prompt)
    first = run_eval(
        samples,
        agent=BaseAgent(memory=RecordingMemory(), llm=flaky),
        checkpoint=path,
        show_progress=False,
    )
    failed = {r.key for r in first if r.error is not None}
    assert failed

    healthy = ScriptedLLM()
    memory = RecordingMemory()
    second = run_eval(
        samples, agent=BaseAgent(memory=memory, llm=healthy), checkpoint=path, show_progress=False
    )
    assert len(healthy.calls) == len(failed)  # only the errors are asked again
    assert all(r.error is None and r.prediction for r in second)
    assert [r.key for r in second] == [r.key for r in first]
    assert {r.key: r for r in second if r.key not in failed} == {
        r.key: r for r in first if r.key not in failed
    }
    # a sample with nothing left to do is not even ingested
    assert len(memory.calls("reset")) == len({key[0] for key in failed})

    third = ScriptedLLM()
    run_eval(
        samples,
        agent=BaseAgent(memory=RecordingMemory(), llm=third),
        checkpoint=path,
        show_progress=False,
    )
    assert third.calls == []


def test_a_torn_last_line_is_dropped_and_redone(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=3)]
    agent = BaseAgent(memory=NullMemory(), llm=ScriptedLLM())
    run_eval(samples, agent=agent, checkpoint=path, show_progress=False)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")

    llm = ScriptedLLM()
    results = run_eval(
        samples, agent=BaseAgent(memory=NullMemory(), llm=llm), checkpoint=path, show_progress=False
    )
    assert len(llm.calls) == 1
    assert len(results) == 3
    assert sorted(_keys(path)) == sorted(r.key for r in results)


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=1)]
    run_eval(samples, agent=BaseAgent(memory=NullMemory()), checkpoint=path, show_progress=False)
    with pytest.raises(CheckpointMismatchError, match=r"memory"):
        run_eval(
            samples, agent=BaseAgent(memory=RecordingMemory()), checkpoint=path, show_progress=False
        )


@dataclass
class _SizedMemory:
    """A memory whose parameter shows in its (dataclass) repr."""

    k: int

    def ingest(self, message: Message, session: Session, /) -> None:
        pass

    def retrieve(self, query: str, /) -> str:
        return ""

    def reset(self) -> None:
        pass


def test_a_memory_repr_tells_configurations_of_one_class_apart(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=2)]
    first = run_eval(
        samples, agent=BaseAgent(memory=_SizedMemory(3)), checkpoint=path, show_progress=False
    )
    with pytest.raises(
        CheckpointMismatchError, match=r'differs in memory_repr: "_SizedMemory\(k=3\)" != "_Sized'
    ):
        run_eval(
            samples, agent=BaseAgent(memory=_SizedMemory(5)), checkpoint=path, show_progress=False
        )
    again = run_eval(
        samples, agent=BaseAgent(memory=_SizedMemory(3)), checkpoint=path, show_progress=False
    )
    assert again == first


def test_answer_settings_are_part_of_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=1)]
    run_eval(
        samples,
        agent=BaseAgent(memory=NullMemory(), llm=ScriptedLLM(), max_tokens=64),
        checkpoint=path,
        show_progress=False,
    )
    with pytest.raises(CheckpointMismatchError, match=r"differs in answer\.max_tokens: 64 != 32"):
        run_eval(
            samples,
            agent=BaseAgent(memory=NullMemory(), llm=ScriptedLLM(), max_tokens=32),
            checkpoint=path,
            show_progress=False,
        )


def test_a_checkpoint_of_another_dataset_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    sample = make_sample("a", questions=2)
    run_eval([sample], agent=BaseAgent(memory=NullMemory()), checkpoint=path, show_progress=False)
    first, second = sample.qa_pairs
    revised = replace(sample, qa_pairs=[first, replace(second, answer="a corrected answer")])
    with pytest.raises(CheckpointMismatchError, match=r"run\.jsonl: sample 'a' question 'a-q1'"):
        run_eval(
            [revised], agent=BaseAgent(memory=NullMemory()), checkpoint=path, show_progress=False
        )


def test_a_corrupt_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    samples = [make_sample("a", questions=2)]
    run_eval(samples, agent=BaseAgent(memory=NullMemory()), checkpoint=path, show_progress=False)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(lines[0] + "{not json\n" + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"run\.jsonl:2"):
        run_eval(
            samples, agent=BaseAgent(memory=NullMemory()), checkpoint=path, show_progress=False
        )


_CHILD = """
import sys
from himga.agent import BaseAgent
from himga.eval import run_eval
from tests.eval.test_eval_support import RecordingMemory, ScriptedLLM, make_sample

samples = [make_sample(f"s{i}", questions=10) for i in range(10)]
llm = ScriptedLLM(delay=float(sys.argv[2]), max_concurrency=4)
agent = BaseAgent(memory=RecordingMemory(), llm=llm)
results = run_eval(samples, agent=agent, show_progress=False, checkpoint=sys.argv[1])
print(len(results), len({r.key for r in results}), sum(r.error is not None for r in results))
"""


def _child(path: Path, delay: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(delay)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    child = _child(path, delay=0.5)  # 100 questions, 4 at a time: ~12 s if left alone
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(encoding="utf-8").count("\n") > 10:
            break
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    done_before = path.read_text(encoding="utf-8").count("\n") - 1  # minus the header
    assert 10 <= done_before < 100  # killed mid-run

    resumed = _child(path, delay=0.0)
    out, _ = resumed.communicate(timeout=60)
    assert resumed.returncode == 0
    assert out.split() == ["100", "100", "0"]
    keys = _keys(path)
    assert len(keys) == len(set(keys)) == 100


_KILLED_AT = """
import os, signal, sys
from himga.agent import BaseAgent
from himga.eval import run_eval
from himga.memory import KeywordMemory
from tests.eval.test_eval_support import make_sample

class DiesOnRetrieve(KeywordMemory):
    calls = 0

    def retrieve(self, query: str) -> str:
        type(self).calls += 1
        if type(self).calls == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().retrieve(query)

results = run_eval(
    [make_sample("s0", questions=100)],
    agent=BaseAgent(memory=DiesOnRetrieve()),
    show_progress=False,
    checkpoint=sys.argv[1],
)
print(len(results), len({r.key for r in results}))
"""


@pytest.mark.integration
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_offline_kill_9_mid_sample_keeps_every_retrieval_finished_before_it(
    tmp_path: Path,
) -> None:
    # Issue 34 (7): offline, a sample's results were recorded only after all its
    # retrievals, so a kill -9 at its 61st left a header-only checkpoint.
    def child(path: Path, die_at: int) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        argv = [sys.executable, "-c", _KILLED_AT, str(path), str(die_at)]
        return subprocess.run(argv, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)

    path = tmp_path / "run.jsonl"
    assert child(path, die_at=61).returncode == -signal.SIGKILL
    assert len(_keys(path)) == 60  # every question but the one in hand
    resumed = child(path, die_at=0)
    assert resumed.stdout.split() == ["100", "100"], resumed.stderr
    keys = _keys(path)
    assert len(keys) == len(set(keys)) == 100
    straight = tmp_path / "straight.jsonl"
    assert child(straight, die_at=0).returncode == 0

    def timeless(file: Path) -> list[dict[str, object]]:
        lines = [json.loads(line) for line in file.read_text("utf-8").splitlines()[1:]]
        return [{k: v for k, v in r.items() if k != "retrieval_latency_s"} for r in lines]

    assert timeless(path) == timeless(straight)


def _stored(i: int) -> EvalResult:
    return make_result(
        question_id=f"q{i}",
        question=f"question {i} – ünïcode 😊?",
        answer="gold",
        evidence_texts=("text",),
        context="line\n" * (i % 3),
        ranked_turn_ids=None if i % 2 else ("D1:1", None),
        retrieval_latency_s=0.001 * i,
        prediction=f"answer {i}",
    )


@given(count=st.integers(min_value=0, max_value=6), cut=st.floats(min_value=0, max_value=1))
def test_a_file_cut_at_any_byte_reopens_as_its_complete_lines(count: int, cut: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        writer = Checkpoint(path, {"memory": "m"})
        writer.open()
        for i in range(count):
            writer.append(_stored(i))
        writer.close()
        raw = path.read_bytes()
        kept = raw[: int(len(raw) * cut)]
        path.write_bytes(kept)
        complete_results = max(kept.count(b"\n") - 1, 0)  # minus the header line

        reader = Checkpoint(path, {"memory": "m"})
        done = reader.open()
        assert list(done.values()) == [_stored(i) for i in range(complete_results)]
        reader.append(_stored(99))  # the repaired file takes appends
        reader.close()
        again = Checkpoint(path, {"memory": "m"})
        assert list(again.open().values())[-1] == _stored(99)
        again.close()

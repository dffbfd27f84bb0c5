"""The guard around memory calls, the run identity and per-question scores, in-process."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.agent import BaseAgent
from himga.data.schema import Message, Session
from himga.eval import RunIdentity, compute_metrics, run_eval, run_identity
from himga.eval._aggregate import question_scores
from himga.eval._memory_calls import GuardedMemory, MemoryCallFailed
from himga.memory import MemoryArgumentError, NullMemory, parse_memory_arguments
from tests.eval.test_eval_support import RecordingMemory, make_sample


class _Gate:
    """A memory whose ``retrieve`` blocks until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def ingest(self, message: Message, session: Session, /) -> None:
        pass

    def retrieve(self, query: str, /) -> str:
        self.calls += 1
        if query == "block":
            self.release.wait()
        return "ok"

    def reset(self) -> None:
        pass


def test_a_late_call_is_waited_for_and_the_memory_is_never_called_concurrently() -> None:
    gate = _Gate()
    guarded = GuardedMemory(gate, timeout=0.3)
    with pytest.raises(MemoryCallFailed, match="MemoryCallTimeout"):
        guarded.retrieve("block")
    with pytest.raises(MemoryCallFailed, match="MemoryBusyError") as busy:
        guarded.retrieve("next")  # waits one more timeout, then gives up uncalled
    assert busy.value.method == "retrieve"
    assert gate.calls == 1
    gate.release.set()
    guarded.reset()  # a sample's first call waits (up to a timeout) for the late call
    assert guarded.retrieve("later") == "ok"  # it returned: back to normal
    guarded.close()


def test_a_stuck_memory_is_replaced_from_the_factory_at_reset() -> None:
    stuck, fresh = _Gate(), _Gate()
    guarded = GuardedMemory(stuck, timeout=0.05, factory=lambda: fresh)
    with pytest.raises(MemoryCallFailed):
        guarded.retrieve("block")
    guarded.reset()  # still stuck after one more timeout: a fresh instance
    assert guarded.retrieve("query") == "ok"
    assert fresh.calls == 1
    stuck.release.set()
    guarded.close()


def test_run_eval_records_memory_errors_and_retries_them_on_resume(tmp_path: Any) -> None:
    class Flaky(RecordingMemory):
        fail = True

        def retrieve(self, query: str, /) -> str:
            if Flaky.fail and "topic1x2" in query:
                raise RuntimeError("flaky")
            return super().retrieve(query)

    samples = [make_sample("a", questions=4)]
    path = tmp_path / "run.jsonl"
    first = run_eval(samples, agent=BaseAgent(memory=Flaky()), checkpoint=path, show_progress=False)
    failed = [r for r in first if r.memory_error is not None]
    assert [r.memory_error.method for r in failed if r.memory_error] == ["retrieve"]
    assert compute_metrics(first)["counts"]["memory_errors"] == 1
    Flaky.fail = False
    again = run_eval(samples, agent=BaseAgent(memory=Flaky()), checkpoint=path, show_progress=False)
    assert all(r.memory_error is None for r in again)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@pytest.mark.slow
@given(arguments=st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True), _JSON))
def test_identity_round_trips_and_its_fingerprint_is_stable(arguments: dict[str, Any]) -> None:
    identity = run_identity(BaseAgent(memory=NullMemory()), memory_arguments=arguments)
    copy = RunIdentity.from_dict(json.loads(json.dumps(identity.to_dict())))
    assert copy.to_dict() == identity.to_dict()
    assert copy.fingerprint == identity.fingerprint
    assert copy.differences(identity) == []
    pairs = [f"{k}={json.dumps(v)}" for k, v in arguments.items()]
    assert parse_memory_arguments(pairs) == arguments


def test_identity_differences_name_the_field() -> None:
    base = run_identity(BaseAgent(memory=NullMemory()), dataset="locomo", dataset_sha256="a")
    other = run_identity(BaseAgent(memory=NullMemory()), dataset="locomo", dataset_sha256="b")
    assert base.differences(other) == ['dataset_sha256: "a" != "b"']
    assert base.fingerprint != other.fingerprint
    with pytest.raises(ValueError, match="unknown run identity field"):
        RunIdentity.from_dict({**base.to_dict(), "extra": 1})


@pytest.mark.parametrize("pair", ["novalue", "=3", "1x=2"])
def test_malformed_memory_arguments_are_refused(pair: str) -> None:
    with pytest.raises(MemoryArgumentError, match="KEY=VALUE"):
        parse_memory_arguments([pair])
    with pytest.raises(MemoryArgumentError, match="twice"):
        parse_memory_arguments(["k=1", "k=2"])
    assert parse_memory_arguments(["name=bm25", "k=5", "on=true"]) == {
        "name": "bm25",
        "k": 5,
        "on": True,
    }


def test_block_metrics_are_the_means_of_question_scores() -> None:
    samples = [make_sample("a", questions=5), make_sample("b", questions=5)]
    results = run_eval(samples, agent=BaseAgent(memory=RecordingMemory()), show_progress=False)
    overall = compute_metrics(results)["overall_with_adversarial"]
    for metric in ("context_recall_any", "recall@10", "ndcg@5"):
        values = [question_scores(r)[metric] for r in results]
        present = [v for v in values if v is not None]
        assert overall[metric] == pytest.approx(sum(present) / len(present))

"""The real LongMemEval oracle file of ../shared: pinned, loadable, as the release describes it."""

from __future__ import annotations

import collections
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.benchmarks import load_dataset, resolve_dataset
from himga.benchmarks.longmemeval import SPLITS
from tests.conftest import SHARED_DATASETS


@pytest.fixture(scope="module")
def data_dir(monkeypatch_module: pytest.MonkeyPatch) -> Path:
    root = Path(os.environ.get("HIMGA_DATA_DIR", SHARED_DATASETS))
    path = root / "longmemeval_oracle" / "longmemeval_oracle.json"
    if not path.is_file():
        message = f"the shared LongMemEval oracle is missing: {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch_module.setenv("HIMGA_DATA_DIR", str(root))
    return root


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_the_shared_file_has_the_pinned_sha256(data_dir: Path) -> None:
    resolved = resolve_dataset("longmemeval_oracle", download=False)
    digest = hashlib.sha256(resolved.path.read_bytes()).hexdigest()
    assert digest == next(s for s in SPLITS if s.name == "longmemeval_oracle").sha256
    assert digest == "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"


def test_the_real_oracle_loads_as_released(data_dir: Path) -> None:
    samples = load_dataset("longmemeval_oracle")
    assert len(samples) == 500
    types = collections.Counter(sample.metadata["question_type"] for sample in samples)
    assert types == {
        "single-session-user": 70,
        "single-session-assistant": 56,
        "single-session-preference": 30,
        "multi-session": 133,
        "temporal-reasoning": 133,
        "knowledge-update": 78,
    }
    assert sum(sample.qa_pairs[0].adversarial for sample in samples) == 30
    # Oracle haystacks hold only evidence sessions: every session is an answer session.
    for sample in samples:
        qa = sample.qa_pairs[0]
        assert {session.session_id for session in sample.sessions} == set(qa.evidence)
        evidence_sessions = {turn.rpartition(":")[0] for turn in qa.evidence_turns}
        assert evidence_sessions <= set(qa.evidence)

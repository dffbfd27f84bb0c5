"""``himga eval`` plans once, then runs: the memory spec is resolved, its source hashed and
the benchmark looked up once per run (:class:`himga.runs._evaluate.RunPlan`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import himga.benchmarks
import himga.eval._identity
import himga.eval._spec
import himga.runs._evaluate
from himga.runs._evaluate import EvalRequest, evaluate_run


def _counted(calls: Counter[str], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return function(*args, **kwargs)

    return counting


def test_a_run_resolves_its_memory_hashes_its_source_and_looks_up_its_benchmark_once(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    # Every name the run reaches them by: the plan's, the spec's and the identity's.
    for module, name in [
        (himga.runs._evaluate, "resolve_memory"),
        (himga.eval._spec, "resolve_memory"),
        (himga.eval._spec, "memory_provenance"),
        (himga.eval._identity, "memory_provenance"),
    ]:
        monkeypatch.setattr(module, name, _counted(calls, name, getattr(module, name)))
    get_benchmark = himga.benchmarks.get_benchmark
    monkeypatch.setattr(
        himga.benchmarks, "get_benchmark", _counted(calls, "get_benchmark", get_benchmark)
    )
    request = EvalRequest(
        memory="keyword", limit=1, out=tmp_path / "run", show_progress=False, preflight=False
    )

    outcome = evaluate_run(request)

    assert outcome.planned == outcome.metrics["counts"]["questions"] > 0
    # get_benchmark as himga.benchmarks exports it: the plan's own lookup (the dataset's
    # resolution and loading look it up in himga.data, apart from the plan).
    assert calls == {"resolve_memory": 1, "memory_provenance": 1, "get_benchmark": 1}

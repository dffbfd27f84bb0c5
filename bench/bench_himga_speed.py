"""Speed of HiMGAMemory beside BM25Memory, measured in the same run.

Corpora: (a) one LoCoMo conversation (conv-26, its questions asked 5 times);
(b) a LongMemEval_S-sized sample from the synthetic generator
(:mod:`himga.benchmarks.longmemeval.synthetic`: 50 sessions x 10 turns of ~1,000 characters,
~115k tokens), queried with 500 six-word runs of its own turns; (c) all 5,882
LoCoMo-10 turns as a single session (a chat log with no session breaks),
queried with conv-26's questions. Per memory: ``ingest`` per turn,
the first query after the ingests (it builds the index), ingest throughput
counting both (turns / (ingests + build)), and ``retrieve`` / ``search(q, 10)``
p50 / p95, the memories taking turns query by query in a shuffled order.
Then the whole of LoCoMo-10 end to end: ``himga eval --memory <name>`` offline
(no LLM), wall time of the command, median of ``--repeats``. With ``--embedder
SPEC`` also ``himga eval --memory himga --memory-arg embedder=SPEC``: once *cold*
(a new, empty embedding cache: every turn and question embedded) and
``--repeats`` times *warm* (the same cache, now holding every text).

Run::

    uv run python bench/bench_himga_speed.py --data-dir ../shared/datasets

Not a test: numbers vary with the machine; compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.bench_recall import git_commit
from himga.benchmarks import load_dataset
from himga.benchmarks.longmemeval.synthetic import write_longmemeval
from himga.data import Message, Session
from himga.memory import BM25Memory, HiMGAMemory

TOP_K = 10
Turns = list[tuple[Message, Session]]
MEMORIES: dict[str, Callable[[], Any]] = {"HiMGAMemory": HiMGAMemory, "BM25Memory": BM25Memory}


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def searcher(memory: Any) -> Callable[[str], object]:
    return lambda query: memory.search(query, TOP_K)


def bench_corpus(turns: Turns, queries: Sequence[str]) -> dict[str, Any]:
    setups: dict[str, dict[str, float]] = {}
    calls: dict[str, Callable[[str], object]] = {}
    for name, factory in MEMORIES.items():
        memory = factory()
        started = time.perf_counter()
        for message, session in turns:
            memory.ingest(message, session)
        ingest_s = time.perf_counter() - started
        started = time.perf_counter()
        memory.search(queries[0], TOP_K)  # builds the index
        build_s = time.perf_counter() - started
        setups[name] = {
            "ingest_us_per_turn": 1e6 * ingest_s / len(turns),
            "build_ms": 1e3 * build_s,
            "turns_per_s_with_build": len(turns) / (ingest_s + build_s),
        }
        calls[f"{name}.retrieve"] = memory.retrieve
        calls[f"{name}.search"] = searcher(memory)
    rng = random.Random(0)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for query in queries:
        names = list(calls)
        rng.shuffle(names)
        for name in names:
            started = time.perf_counter()
            calls[name](query)
            samples[name].append(time.perf_counter() - started)
    latency = {
        name: {
            "p50_ms": 1e3 * statistics.median(values),
            "p95_ms": 1e3 * percentile(values, 0.95),
            "queries": len(values),
        }
        for name, values in samples.items()
    }
    return {"setup": setups, "latency": latency}


def eval_wall_time(
    memory: str, repeats: int, arguments: Sequence[str] = (), cache: Path | None = None
) -> float:
    """Median wall time of `himga eval --memory <memory> <arguments>`, under `cache` if given."""
    env = dict(os.environ)
    if cache is not None:
        env["HIMGA_EMBED_CACHE"] = str(cache)
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            command = [sys.executable, "-m", "himga", "eval", "--memory", memory, *arguments]
            started = time.perf_counter()
            subprocess.run(
                [*command, "--out", out, "--no-progress"], check=True, capture_output=True, env=env
            )
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument("--repeats", type=int, default=3, help="end-to-end runs per memory")
    parser.add_argument("--embedder", default=None, help="also time himga with this embedder")
    args = parser.parse_args()
    commit = git_commit()  # now: the code that runs, whatever is committed meanwhile
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    load_average = os.getloadavg()
    locomo = list(load_dataset("locomo"))
    conversation = locomo[0]
    questions = [qa.question for qa in conversation.qa_pairs]
    corpora: dict[str, tuple[Turns, list[str]]] = {
        f"LoCoMo {conversation.sample_id}": (
            [(m, s) for s, m in conversation.iter_turns()],
            questions * 5,
        )
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "longmemeval_s_sized.json"
        write_longmemeval(path, questions=1)
        (sample,) = load_dataset("longmemeval_s", path=path)
    # The generated text is meaningless: queries are word runs from its own turns.
    synthetic = [(m, s) for s, m in sample.iter_turns()]
    rng = random.Random(1)
    probes = [" ".join(rng.choice(synthetic)[0].content.split()[:6]) for _ in range(500)]
    corpora["LongMemEval_S-sized (synthetic, 1 sample)"] = (synthetic, probes)
    # A chat log ingested as one long session: nothing of the index may grow with its square.
    one = Session("one", [m for sample in locomo for _, m in sample.iter_turns()])
    corpora["LoCoMo-10 as one session"] = ([(m, one) for m in one.messages], questions)
    results = {}
    print(
        "| corpus | memory | ingest µs/turn | build ms | turns/s incl. build "
        "| retrieve p50 / p95 ms | search p50 / p95 ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for corpus, (turns, queries) in corpora.items():
        measured = results[f"{corpus} ({len(turns)} turns)"] = bench_corpus(turns, queries)
        for name in MEMORIES:
            setup, lat = measured["setup"][name], measured["latency"]
            r, s = lat[f"{name}.retrieve"], lat[f"{name}.search"]
            print(
                f"| {corpus} ({len(turns)} turns) | {name} | {setup['ingest_us_per_turn']:.2f} "
                f"| {setup['build_ms']:.1f} | {setup['turns_per_s_with_build']:,.0f} "
                f"| {r['p50_ms']:.3f} / {r['p95_ms']:.3f} | {s['p50_ms']:.3f} / {s['p95_ms']:.3f} |"
            )
    end_to_end = {name: eval_wall_time(name, args.repeats) for name in ("himga", "bm25")}
    print(
        "\n`himga eval --memory <name>` on LoCoMo-10, offline, wall time (median of "
        f"{args.repeats}): "
        + ", ".join(f"{k} {v:.2f} s" for k, v in end_to_end.items())
        + f"; ratio {end_to_end['himga'] / end_to_end['bm25']:.2f}x"
    )
    if args.embedder is not None:
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "embeddings.sqlite3"
            arguments = ["--memory-arg", f"embedder={args.embedder}"]
            end_to_end["himga, embedder cold"] = eval_wall_time("himga", 1, arguments, cache)
            warm = eval_wall_time("himga", args.repeats, arguments, cache)
            end_to_end["himga, embedder warm"] = warm
        print(
            f"with --memory-arg embedder={args.embedder}: cold (empty cache) "
            f"{end_to_end['himga, embedder cold']:.1f} s, warm {warm:.2f} s "
            f"({warm / end_to_end['himga']:.2f}x the run without an embedder)"
        )
    manifest = {
        "bench": "bench/bench_himga_speed.py",
        "git_commit": commit,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_before": load_average,
        "load_average_after": os.getloadavg(),
        "versions": {n: version(n) for n in ("himga", "numpy", "scipy", "bm25s", "PyStemmer")},
        "results": results,
        "end_to_end_s": end_to_end,
    }
    print("\nmanifest:\n" + json.dumps(manifest, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

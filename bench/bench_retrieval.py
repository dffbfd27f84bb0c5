"""Speed of BM25Memory beside raw bm25s and rank-bm25, measured in the same run.

Corpora: (a) one LoCoMo conversation (conv-26, every question of it as queries);
(b) 20,000 and (c) 200,000 generated messages -- words drawn from LoCoMo's own
word stream (so term frequencies are realistic), 8-30 per message, sessions of
20 messages with a date -- queried with LoCoMo questions.

Per system: ingest/build cost and per-query latency for the top 10 turns,
measured two ways: p50 / p95 of single queries with the systems taking turns in a
shuffled order (they share the background load; caches are as cold as in an
evaluation loop), and the warm p50 of each system alone, its queries run back to
back three times (the usual queries-per-second setting).

* ``BM25Memory``: ``ingest`` per message (µs); the first ``retrieve`` after the
  ingests (it builds the index); then ``retrieve`` (top 10 re-ordered, formatted)
  and ``search(query, 10)``.
* raw bm25s: bm25s's README path -- ``bm25s.tokenize(..., stopwords="en",
  stemmer=PyStemmer English)``, ``BM25().index``, per query ``bm25s.tokenize`` +
  ``retrieve(k=10)``.
* rank-bm25: ``BM25Okapi`` over the same bm25s tokens, per query tokenize +
  ``get_scores`` + top 10; and ``rank-bm25.get_scores``, the same without the
  tokenising (queries tokenised before timing), the stricter baseline. It scans
  every document per query term, so the large corpora get fewer queries (see the
  ``queries`` column).

Run::

    uv run python bench/bench_retrieval.py --data-dir ../shared/datasets

Prints markdown tables, the ratios and a JSON manifest. Not a test: numbers vary
with the machine; compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.bench_recall import git_commit
from himga._extras import require
from himga.benchmarks import load_dataset
from himga.data import Message, Sample, Session
from himga.memory import BM25Memory

TOP_K = 10
Turns = list[tuple[Message, Session]]


@dataclass(frozen=True)
class Corpus:
    name: str
    turns: Turns
    queries: list[str]
    rank_bm25_queries: int  # rank-bm25 is O(documents) per query term: fewer queries at scale


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p95_ms: float
    queries: int


def summary(samples: list[float]) -> Latency:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Latency(1e3 * statistics.median(ordered), 1e3 * p95, len(ordered))


def interleaved(
    calls: dict[str, Callable[[str], object]], queries: Sequence[str], limits: dict[str, int]
) -> dict[str, Latency]:
    """Per-query latency of every system, taking turns query by query in a shuffled order.

    Interleaving exposes every system to the same background load, and the
    shuffle makes each follow every other equally often (whoever runs right
    after rank-bm25 finds the CPU caches cold), so the ratios stay meaningful on
    a shared machine. ``limits`` caps a system's number of queries (its first ones).
    """
    rng = random.Random(0)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for i, query in enumerate(queries):
        names = [name for name in calls if i < limits.get(name, len(queries))]
        rng.shuffle(names)
        for name in names:
            started = time.perf_counter()
            calls[name](query)
            samples[name].append(time.perf_counter() - started)
    return {name: summary(values) for name, values in samples.items()}


def warm(call: Callable[[str], object], queries: Sequence[str], passes: int = 3) -> float:
    """Median ms per query over ``passes`` back-to-back passes of one system alone (warm)."""
    samples = []
    for _ in range(passes):
        for query in queries:
            started = time.perf_counter()
            call(query)
            samples.append(time.perf_counter() - started)
    return 1e3 * statistics.median(samples)


def locomo_corpus(sample: Sample) -> Corpus:
    turns = [(message, session) for session, message in sample.iter_turns()]
    questions = [qa.question for qa in sample.qa_pairs]
    queries = questions * 5
    return Corpus(f"LoCoMo {sample.sample_id} ({len(turns)} turns)", turns, queries, len(queries))


def generated_corpus(
    size: int, samples: Sequence[Sample], queries: int, rank_bm25_queries: int
) -> Corpus:
    rng = random.Random(size)
    words = [w for s in samples for _, m in s.iter_turns() for w in m.content.split()]
    questions = [qa.question for s in samples for qa in s.qa_pairs]
    turns: Turns = []
    for start in range(0, size, 20):
        number = start // 20 + 1
        count = min(20, size - start)
        messages = [
            Message(
                ("Ada", "Bo")[i % 2],
                " ".join(rng.choices(words, k=rng.randint(8, 30))),
                f"D{number}:{i + 1}",
            )
            for i in range(count)
        ]
        session = Session(f"session_{number}", messages, f"{number % 28 + 1} May, 2023")
        turns.extend((message, session) for message in messages)
    return Corpus(
        f"generated ({size:,} messages)", turns, rng.sample(questions, queries), rank_bm25_queries
    )


Query = Callable[[str], object]


def setup_memory(corpus: Corpus) -> tuple[dict[str, float], dict[str, Query]]:
    memory = BM25Memory(k=TOP_K)
    started = time.perf_counter()
    for message, session in corpus.turns:
        memory.ingest(message, session)
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    memory.retrieve(corpus.queries[0])  # builds the index
    first_s = time.perf_counter() - started
    setup = {"ingest_us_per_message": 1e6 * ingest_s / len(corpus.turns), "build_ms": 1e3 * first_s}
    calls: dict[str, Query] = {
        "BM25Memory.retrieve": memory.retrieve,
        "BM25Memory.search": lambda query: memory.search(query, TOP_K),
    }
    return setup, calls


def setup_bm25s(corpus: Corpus) -> tuple[dict[str, float], dict[str, Query]]:
    bm25s = require("bm25s", extra="bm25", purpose="the raw bm25s baseline")
    stemmer = require("Stemmer", extra="bm25", purpose="the raw bm25s baseline").Stemmer("english")
    texts = [f"{message.role}: {message.content}" for message, _ in corpus.turns]
    started = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    build_s = time.perf_counter() - started

    def query(text: str) -> object:
        tokens = bm25s.tokenize(text, stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(tokens, k=min(TOP_K, len(texts)), show_progress=False)

    return {"build_ms": 1e3 * build_s}, {"raw bm25s": query}


def setup_rank_bm25(corpus: Corpus) -> tuple[dict[str, float], dict[str, Query]]:
    bm25s = require("bm25s", extra="bm25", purpose="tokenising for rank-bm25")
    stemmer = require("Stemmer", extra="bm25", purpose="tokenising for rank-bm25").Stemmer(
        "english"
    )
    np = require("numpy", extra="bm25", purpose="the rank-bm25 baseline")
    from rank_bm25 import BM25Okapi

    texts = [f"{message.role}: {message.content}" for message, _ in corpus.turns]
    started = time.perf_counter()
    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )
    index = BM25Okapi(tokens)
    build_s = time.perf_counter() - started

    def analyse(text: str) -> list[str]:
        (terms,) = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        return list(terms)

    def top(terms: list[str]) -> object:
        return np.argpartition(-index.get_scores(terms), TOP_K)[:TOP_K]

    analysed = {text: analyse(text) for text in corpus.queries}  # outside any timing
    return {"build_ms": 1e3 * build_s}, {
        "rank-bm25": lambda text: top(analyse(text)),
        "rank-bm25.get_scores": lambda text: top(analysed[text]),
    }


def bench(corpus: Corpus) -> dict[str, Any]:
    """Setup costs of the three systems, then their per-query latency, interleaved."""
    setups = {
        "BM25Memory": setup_memory(corpus),
        "raw bm25s": setup_bm25s(corpus),
        "rank-bm25": setup_rank_bm25(corpus),
    }
    calls = {name: call for _, system in setups.values() for name, call in system.items()}
    limits = {
        "rank-bm25": corpus.rank_bm25_queries,
        "rank-bm25.get_scores": corpus.rank_bm25_queries,
    }
    latencies = interleaved(calls, corpus.queries, limits)
    back_to_back = {
        name: warm(call, corpus.queries[: limits.get(name, len(corpus.queries))])
        for name, call in calls.items()
    }
    return {
        "setup": {name: setup for name, (setup, _) in setups.items()},
        "latency": latencies,
        "warm_ms": back_to_back,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[20_000, 200_000], help="generated corpora"
    )
    args = parser.parse_args()
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    samples = list(load_dataset("locomo"))
    corpora = [locomo_corpus(samples[0])]
    for size in args.sizes:
        corpora.append(
            generated_corpus(
                size,
                samples,
                queries=300 if size <= 20_000 else 100,
                rank_bm25_queries=50 if size <= 20_000 else 10,
            )
        )

    results: dict[str, dict[str, Any]] = {}
    print(
        "| corpus | system | ingest µs/msg | build ms | p50 ms | p95 ms | warm p50 ms | queries |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for corpus in corpora:
        measured = results[corpus.name] = bench(corpus)
        setup = measured["setup"]
        for system, lat in measured["latency"].items():
            owner, _, variant = system.partition(".")
            # Setup costs once per system, on its first row.
            first = variant in ("", "retrieve")
            ingest = setup[owner].get("ingest_us_per_message")
            ingest_cell = f"{ingest:.2f}" if first and ingest is not None else ""
            build_cell = f"{setup[owner]['build_ms']:.1f}" if first else ""
            print(
                f"| {corpus.name} | {system} | {ingest_cell} | {build_cell} "
                f"| {lat.p50_ms:.3f} | {lat.p95_ms:.3f} | {measured['warm_ms'][system]:.3f} "
                f"| {lat.queries} |"
            )

    print(
        "\n| corpus | rank-bm25 / BM25Memory.retrieve, p50 (warm) "
        "| rank-bm25.get_scores / BM25Memory.retrieve, p50 (warm) "
        "| BM25Memory.retrieve / raw bm25s, p50 (warm) |"
    )
    print("|---|---|---|---|")
    ratios: dict[str, dict[str, float]] = {}
    for name, measured in results.items():
        p50 = {system: lat.p50_ms for system, lat in measured["latency"].items()}
        warm_ms = measured["warm_ms"]
        ours, ours_warm = p50["BM25Memory.retrieve"], warm_ms["BM25Memory.retrieve"]
        ratios[name] = {
            "speedup_vs_rank_bm25_p50": p50["rank-bm25"] / ours,
            "speedup_vs_rank_bm25_warm": warm_ms["rank-bm25"] / ours_warm,
            "speedup_vs_rank_bm25_scoring_p50": p50["rank-bm25.get_scores"] / ours,
            "speedup_vs_rank_bm25_scoring_warm": warm_ms["rank-bm25.get_scores"] / ours_warm,
            "cost_vs_raw_bm25s_p50": ours / p50["raw bm25s"],
            "cost_vs_raw_bm25s_warm": ours_warm / warm_ms["raw bm25s"],
        }
        r = ratios[name]
        print(
            f"| {name} | {r['speedup_vs_rank_bm25_p50']:.1f}x "
            f"({r['speedup_vs_rank_bm25_warm']:.1f}x) "
            f"| {r['speedup_vs_rank_bm25_scoring_p50']:.1f}x "
            f"({r['speedup_vs_rank_bm25_scoring_warm']:.1f}x) "
            f"| {r['cost_vs_raw_bm25s_p50']:.2f}x ({r['cost_vs_raw_bm25s_warm']:.2f}x) |"
        )

    def plain(value: Any) -> Any:
        if isinstance(value, Latency):
            return {key: round(v, 4) for key, v in vars(value).items()}
        if isinstance(value, dict):
            return {key: plain(v) for key, v in value.items()}
        return round(value, 4) if isinstance(value, float) else value

    manifest = {
        "bench": "bench/bench_retrieval.py",
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "versions": {
            name: version(name) for name in ("himga", "bm25s", "PyStemmer", "numpy", "rank-bm25")
        },
        "results": plain(results),
        "ratios": plain(ratios),
    }
    print("\nmanifest:\n" + json.dumps(manifest, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

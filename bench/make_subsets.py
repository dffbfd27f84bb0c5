"""The fixed question subsets of the answer-accuracy measurement (``--questions`` files).

Run by hand; it rewrites ``docs/subsets/*.txt`` and prints each subset's counts::

    HIMGA_DATA_DIR=../shared/datasets uv run python -m bench.make_subsets

Each subset is drawn per question category: one ``random.Random(SEED)`` samples each
category's ids (listed in dataset order) in turn, categories in the benchmark's report
order, so the same data and seed give the same files
(``tests/data/test_subsets.py`` redraws them and compares):

* ``locomo10_200.txt``: 200 LoCoMo-10 questions, proportional to each category's
  share of the 1,986, with a floor of 20 a category (open-domain's share would be
  9.7); the remaining 180 are split over the other categories by their shares,
  largest remainder first.
* ``beam100k_100.txt``: 100 BEAM-100K questions, 10 of each of the ten types (of 20).
* ``locomo10_50.txt``: 50 of ``locomo10_200.txt``'s questions, 10 of each category: the
  set the first answer-accuracy runs could afford on 2 CPU cores (docs/answers.md).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from himga.benchmarks import get_benchmark, load_dataset

__all__ = ["SEED", "SUBSETS", "Subset", "allocate", "draw", "read_ids"]

SEED = 31
DOCS = Path(__file__).resolve().parent.parent / "docs" / "subsets"


@dataclass(frozen=True)
class Subset:
    """One subset: its ``file`` under ``docs/subsets``, the ``dataset``, its ``size`` and
    the ``floor`` of questions a category (``size`` split evenly when ``even``)."""

    file: str
    dataset: str
    size: int
    floor: int
    even: bool = False
    within: str | None = None  # draw only from this (earlier) subset file's ids


SUBSETS = (
    Subset("locomo10_200.txt", "locomo", size=200, floor=20),
    Subset("beam100k_100.txt", "beam-100k", size=100, floor=10, even=True),
    Subset("locomo10_50.txt", "locomo", size=50, floor=10, even=True, within="locomo10_200.txt"),
)


def allocate(counts: Mapping[str, int], size: int, floor: int) -> dict[str, int]:
    """Questions per category: proportional to ``counts``, at least ``floor`` (or all of a
    smaller category); the categories held at the floor are set aside and the rest of
    ``size`` is split over the others by largest remainder."""
    fixed: dict[str, int] = {}
    while True:
        free = {c: n for c, n in counts.items() if c not in fixed}
        left = size - sum(fixed.values())
        total = sum(free.values())
        low = {c: min(floor, n) for c, n in free.items() if n * left / total < floor}
        if not low:
            break
        fixed.update(low)
    shares = {c: n * left / total for c, n in free.items()}
    given = {c: int(share) for c, share in shares.items()}
    by_remainder = sorted(free, key=lambda c: (given[c] - shares[c], c))
    for category in by_remainder[: left - sum(given.values())]:
        given[category] += 1
    return {c: (fixed | given)[c] for c in counts}


def draw(subset: Subset) -> tuple[list[str], dict[str, int]]:
    """The subset's question ids in dataset order, and how many of each category."""
    samples = load_dataset(subset.dataset)
    allowed = None if subset.within is None else set(read_ids(DOCS / subset.within))
    ids: dict[str, list[str]] = {c: [] for c in get_benchmark(subset.dataset).categories}
    for sample in samples:
        for qa in sample.qa_pairs:
            if allowed is None or qa.question_id in allowed:
                ids.setdefault(qa.category, []).append(qa.question_id)
    counts = {c: len(found) for c, found in ids.items() if found}
    if subset.even:
        wanted = {c: subset.size // len(counts) for c in counts}
    else:
        wanted = allocate(counts, subset.size, subset.floor)
    rng = random.Random(SEED)
    chosen = {qid for c in counts for qid in rng.sample(ids[c], wanted[c])}
    order = [qa.question_id for s in samples for qa in s.qa_pairs if qa.question_id in chosen]
    return order, wanted


def read_ids(path: Path) -> list[str]:
    """The question ids of a committed subset file (its comment lines skipped)."""
    lines = path.read_text("utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def render(subset: Subset, ids: Sequence[str], wanted: Mapping[str, int]) -> str:
    """The file: a header of comments (how it was drawn), then one id a line."""
    per = ", ".join(f"{c} {n}" for c, n in wanted.items())
    header = [
        f"# {len(ids)} questions of {subset.dataset}, drawn by bench/make_subsets.py "
        f"(random.Random({SEED}), stratified by category; see docs/subsets/README.md)",
        f"# per category: {per}",
    ]
    return "\n".join([*header, *ids]) + "\n"


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    for subset in SUBSETS:
        ids, wanted = draw(subset)
        (DOCS / subset.file).write_text(render(subset, ids, wanted), "utf-8")
        print(f"{subset.file}: {len(ids)} questions; {wanted}")


if __name__ == "__main__":
    main()

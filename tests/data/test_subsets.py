"""The committed question subsets (docs/subsets): redrawn by bench/make_subsets.py they are
the same files, and through ``--questions`` they run and cover every category."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from bench.make_subsets import DOCS, SUBSETS, Subset, allocate, draw, read_ids, render

from himga._cli import main
from himga.benchmarks import get_benchmark, load_dataset
from himga.data import QuestionSubset
from tests.data_fixtures import read_run

pytestmark = pytest.mark.filterwarnings("ignore::himga.data.EvidenceWarning")


def test_allocation_is_proportional_above_the_floor() -> None:
    counts = {"a": 841, "b": 446, "c": 321, "d": 282, "e": 96}
    assert allocate(counts, 200, 20) == {"a": 80, "b": 42, "c": 31, "d": 27, "e": 20}
    assert allocate({"a": 5, "b": 1000}, 50, 10) == {"a": 5, "b": 45}  # all of a small one
    assert allocate({"a": 3, "b": 1}, 4, 0) == {"a": 3, "b": 1}


@pytest.mark.parametrize("subset", SUBSETS, ids=[s.file for s in SUBSETS])
def test_the_committed_subset_is_what_the_script_draws(subset: Subset, data_dir: Path) -> None:
    ids, wanted = draw(subset)
    assert (DOCS / subset.file).read_text("utf-8") == render(subset, ids, wanted)


@pytest.mark.parametrize(("subset", "least"), list(zip(SUBSETS, (200, 100, 50), strict=True)))
def test_the_subset_covers_every_category(subset: Subset, least: int, data_dir: Path) -> None:
    chosen = QuestionSubset.read(DOCS / subset.file)
    samples = chosen.select(load_dataset(subset.dataset), subset.dataset)
    per = Counter(qa.category for s in samples for qa in s.qa_pairs)
    assert sum(per.values()) == len(chosen.ids) >= least
    assert set(per) == set(get_benchmark(subset.dataset).categories)
    assert min(per.values()) >= subset.floor


def test_a_subset_drawn_within_another_holds_only_its_ids(data_dir: Path) -> None:
    for subset in SUBSETS:
        if subset.within is not None:
            assert set(read_ids(DOCS / subset.file)) <= set(read_ids(DOCS / subset.within))


def test_the_locomo_subset_runs_through_questions(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "run"
    questions = DOCS / "locomo10_200.txt"
    argv = ["eval", "--questions", str(questions), "--no-preflight", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    results, metrics, manifest = read_run(out)
    assert len(results) == 200
    assert set(metrics["by_category"]) == set(get_benchmark("locomo").categories)
    assert manifest["questions"] == {
        "file": str(questions),
        "ids": 200,
        "sha256": QuestionSubset.read(questions).sha256,
    }

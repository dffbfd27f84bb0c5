"""One options object: every setting that changes a result is in the run identity (issue 22)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from himga.agent import BaseAgent
from himga.data.schema import Message, Sample, Session
from himga.eval import (
    SEARCH_K,
    CheckpointMismatchError,
    EvalOptions,
    EvalResult,
    run_eval,
    run_identity,
)
from himga.memory import BM25Memory, Hit
from tests.eval.test_eval_support import make_sample

EVAL = Path(__file__).resolve().parents[2] / "src" / "himga" / "eval"


class EveryTurn:
    """Searchable: every ingested turn, in order, for any query (as deep as asked)."""

    def __init__(self) -> None:
        self._turns: list[str | None] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self._turns.append(message.turn_id)

    def retrieve(self, query: str, /) -> str:
        return ""

    def search(self, query: str, k: int, /) -> list[Hit]:
        return [Hit(turn_id=turn, score=1.0, text="") for turn in self._turns[:k]]

    def reset(self) -> None:
        self._turns.clear()


def _samples() -> list[Sample]:
    return [make_sample("a", sessions=3, turns=8), make_sample("b", sessions=3, turns=8)]


def _timeless(results: list[EvalResult]) -> list[dict[str, object]]:
    return [
        {k: v for k, v in r.to_dict().items() if k not in ("retrieval_latency_s", "latency_s")}
        for r in results
    ]


def test_the_old_keyword_arguments_and_the_options_object_run_the_same(tmp_path: Path) -> None:
    agent = BaseAgent(memory=EveryTurn())
    by_keywords = run_eval(
        _samples(), agent=agent, show_progress=False, checkpoint=tmp_path / "k.jsonl"
    )
    options = EvalOptions(show_progress=False, checkpoint=tmp_path / "o.jsonl")
    by_options = run_eval(_samples(), agent=agent, options=options)
    assert _timeless(by_options) == _timeless(by_keywords)
    # A keyword given beside the options overrides that field.
    deeper = run_eval(_samples(), agent=agent, options=options, checkpoint=None, search_k=2)
    assert {len(r.ranked_turn_ids or ()) for r in deeper} == {2}
    assert {len(r.ranked_turn_ids or ()) for r in by_options} == {24}  # 3 sessions x 8 turns


def test_the_search_depth_is_part_of_the_run_identity(tmp_path: Path) -> None:
    agent = BaseAgent(memory=BM25Memory())
    checkpoint = tmp_path / "c.jsonl"
    run_eval(_samples(), agent=agent, show_progress=False, checkpoint=checkpoint)
    header = json.loads(checkpoint.read_text("utf-8").splitlines()[0])
    assert header["run"]["search_k"] == SEARCH_K
    with pytest.raises(CheckpointMismatchError, match="search_k: 50 != 5"):
        run_eval(_samples(), agent=agent, show_progress=False, checkpoint=checkpoint, search_k=5)
    shallow = run_identity(agent, search_k=5)
    assert shallow.fingerprint != run_identity(agent).fingerprint
    with pytest.raises(ValueError, match="identity was made for search_k=5"):
        EvalOptions(identity=shallow)
    with pytest.raises(ValueError, match="search_k must be >= 1"):
        EvalOptions(search_k=0)


def _imports(module: Path) -> set[str]:
    """Every himga.eval module ``module`` imports, at the top, in a function or for typing."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text("utf-8"))):
        name = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        if name.startswith("himga.eval."):
            found.add(name.rpartition(".")[2])
    return found


def test_the_eval_modules_import_each_other_without_a_cycle() -> None:
    graph = {path.stem: _imports(path) for path in EVAL.glob("*.py")}
    state: dict[str, int] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        assert state.get(name) != 1, f"import cycle: {' -> '.join((*path, name))}"
        state[name] = 1
        for imported in sorted(graph.get(name, ())):
            visit(imported, (*path, name))
        state[name] = 2

    for name in sorted(graph):
        visit(name, ())

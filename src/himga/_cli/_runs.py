"""Reading a run directory written by ``himga eval`` (for ``compare`` and ``report``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from himga._errors import HimgaError
from himga.eval import EvalResult
from himga.eval._ranking import RANK_KS

__all__ = ["METRIC_TITLES", "Run", "RunReadError", "load_run"]

#: Short column titles of the metrics ``compare`` and ``report`` show, by metric key.
METRIC_TITLES = {
    "judge": "judge",
    "f1": "F1",
    "bleu1": "BLEU-1",
    "exact_match": "EM",
    "context_recall": "ctx-recall",
    "context_recall_any": "ctx-any",
    "context_recall_all": "ctx-all",
    **{f"recall@{k}": f"R@{k}" for k in RANK_KS},
    **{f"ndcg@{k}": f"nDCG@{k}" for k in RANK_KS},
}


class RunReadError(HimgaError, ValueError):
    """A run directory is missing a file or holds a malformed one (the message says which)."""


@dataclass(frozen=True)
class Run:
    """One run directory: its manifest, metrics and results (with judge scores, NaN if none)."""

    path: Path
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    results: list[EvalResult]
    judge: list[float]

    @property
    def label(self) -> str:
        """The memory spec with its arguments, e.g. ``bm25 k=20``."""
        memory = self.manifest.get("memory", {})
        arguments = " ".join(f"{k}={v}" for k, v in (memory.get("arguments") or {}).items())
        return " ".join(part for part in (str(memory.get("spec", "?")), arguments) if part)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise RunReadError(f"{path}: missing (is {path.parent} a himga eval run?)") from None
    except json.JSONDecodeError as exc:
        raise RunReadError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunReadError(f"{path}: expected a JSON object")
    return data


def load_run(path: Path) -> Run:
    """Read ``manifest.json``, ``metrics.json`` and ``results.jsonl`` of run directory ``path``."""
    manifest = _json(path / "manifest.json")
    metrics = _json(path / "metrics.json")
    results: list[EvalResult] = []
    judge: list[float] = []
    file = path / "results.jsonl"
    try:
        lines = file.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise RunReadError(f"{file}: missing (is {path} a himga eval run?)") from None
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            results.append(EvalResult.from_dict(record))
        except (KeyError, TypeError, ValueError) as exc:
            raise RunReadError(f"{file}:{number}: malformed result: {exc}") from exc
        score = record.get("judge")
        judge.append(float(score) if isinstance(score, (int, float)) else math.nan)
    return Run(path, manifest, metrics, results, judge)

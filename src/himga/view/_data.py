"""The viewer's data: the JSON documents both the server and the single HTML file hand the page.

Four kinds of document, the same in both modes, so the page has one code path:

* the leaderboard (:meth:`ViewData.leaderboard`): one entry per run, with its arm and
  per-category metrics (the registry's table columns, the judge's with its Wilson 95%
  interval), retrieval latency p50/p95,
  context size, model-call cost and wall time, and its recall@k curve;
* a page of a run's questions (:meth:`ViewData.questions`): filtered by category,
  outcome and judge disagreement, 50 to a page;
* a run's question index (:meth:`ViewData.index`): one compact row per question,
  columns as arrays (what the diff of two runs matches and compares);
* one question in full (:meth:`ViewData.question`): texts, evidence, the retrieved
  context with the spans of the evidence in it, answer, verdict, errors.

A run may be given by its head alone (:class:`~himga.runs.RunHead`: manifest and
metrics); its results, the bulk of it, are then read the first time a document needs
them, so the leaderboard of large runs costs their small files only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from himga.eval import (
    RANK_KS,
    EvalResult,
    available_metrics,
    context_containment,
    judge_interval,
    question_scores,
)
from himga.runs import (
    ARM_TITLES,
    HEADLINE_METRICS,
    PartialRun,
    Run,
    RunHead,
    arm_of,
    load_run,
    run_status,
)

__all__ = ["OUTCOMES", "PAGE", "ViewData", "evidence_spans", "outcome", "percentile"]

#: Each question's outcome, by its index in the question index's ``outcome`` column:
#: ``correct`` -- judged right (score >= 0.5) or, unjudged, an evidence turn's text is in
#: the retrieved context; ``wrong`` -- the opposite; ``error`` -- a memory, LLM or judge
#: error; ``unscored`` -- neither a verdict nor evidence to look for.
OUTCOMES = ("correct", "wrong", "error", "unscored")

_TEXT_SHOWN = 160  # characters of a question kept in the index (the page shows the rest)
_T = TypeVar("_T")

#: Questions to a page of the question list.
PAGE = 50
#: Bytes of ``results.jsonl`` :meth:`ViewData.prefetch` reads at most (about 5x that
#: in memory).
PREFETCH_BYTES = 256 * 1024 * 1024


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile ``share`` (0..1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def evidence_spans(context: str, texts: Sequence[str | None]) -> list[list[int]]:
    """The ``[start, end)`` character spans of each evidence text's occurrences in
    ``context``, sorted and merged where they overlap."""
    spans: list[list[int]] = []
    for text in texts:
        if not text:
            continue
        start = context.find(text)
        while start != -1:
            spans.append([start, start + len(text)])
            start = context.find(text, start + 1)
    spans.sort()
    merged: list[list[int]] = []
    for span in spans:
        if merged and span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
        else:
            merged.append(span)
    return merged


def outcome(run: Run | PartialRun, index: int) -> int:
    """The index in :data:`OUTCOMES` of question ``index`` of ``run``."""
    return _outcome(_Question.of(run, index))


class _Question(NamedTuple):
    """One question of a run: its result, the eval's judge score (NaN: none) and the
    judge's error."""

    result: EvalResult
    judge: float
    judge_error: str | None

    @classmethod
    def of(cls, run: Run | PartialRun, n: int) -> _Question:
        return cls(run.results[n], run.judge[n], run.judge_errors[n] if run.judge_errors else None)

    @classmethod
    def parse(cls, line: bytes) -> _Question:
        """From its line of ``results.jsonl``, as :func:`himga.runs.load_run` reads it."""
        record = json.loads(line.decode("utf-8"))
        score = record.get("judge")
        error = record.get("judge_error")
        return cls(
            EvalResult.from_dict(record),
            float(score) if isinstance(score, (int, float)) else math.nan,
            None if error is None else str(error),
        )


def _outcome(question: _Question) -> int:
    result, judge, judge_error = question
    if result.memory_error is not None or result.error is not None or judge_error:
        return OUTCOMES.index("error")
    if not math.isnan(judge):
        return OUTCOMES.index("correct" if judge >= 0.5 else "wrong")
    # Verbatim is enough to be found (whitespace-collapsed containment follows from it),
    # and much cheaper than collapsing a long context; only a miss pays for the check.
    if any(text and text.strip() and text in result.context for text in result.evidence_texts):
        return OUTCOMES.index("correct")
    found = context_containment(result)
    if found is None:
        return OUTCOMES.index("unscored")
    return OUTCOMES.index("correct" if found > 0 else "wrong")


#: A result's top-level category in its ``results.jsonl`` line. ``himga eval`` writes each
#: record with its fields in order, ``category`` before any nested object, and a quote
#: inside a string is escaped: the first match is the record's own key.
_CATEGORY = re.compile(rb'"category"\s*:\s*("(?:[^"\\]|\\.)*"|[^,}\s]+)')


class _Loaded:
    """The questions of a run whose results are read."""

    def __init__(self, run: Run | PartialRun) -> None:
        self._run = run

    def __len__(self) -> int:
        return len(self._run.results)

    def question(self, n: int) -> _Question:
        return _Question.of(self._run, n)

    def categories(self) -> list[str]:
        """Each question's category, in order."""
        return [result.category for result in self._run.results]


class _Lines:
    """The questions of a finished run from the lines of its ``results.jsonl``, checked
    against the manifest's checksum but not parsed: one is parsed when it is shown, so
    the first page of a large run does not wait for the run to be read whole."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines
        self._categories: list[str] | None = None

    def __len__(self) -> int:
        return len(self._lines)

    def question(self, n: int) -> _Question:
        if not 0 <= n < len(self._lines):
            raise IndexError(n)
        return _Question.parse(self._lines[n])

    def categories(self) -> list[str]:
        """Each question's category, in order, found in its line (``ValueError`` where
        none is: the run is then read whole, which says what is wrong)."""
        if self._categories is None:
            found = []
            for line in self._lines:
                match = _CATEGORY.search(line)
                if match is None:
                    raise ValueError("a result without a category")
                found.append(str(json.loads(match[1].decode("utf-8"))))
            self._categories = found
        return self._categories


_Source = _Loaded | _Lines


def _number(value: Any) -> float | None:
    """A finite number as a float, else ``None`` (JSON has no NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class ViewData:
    """The documents of the viewer for ``runs``: each read by :func:`himga.runs.load_run`,
    or a :class:`~himga.runs.RunHead` (:func:`himga.runs.load_head`) whose results are
    read on first need (:meth:`run`); run ``i`` is ``runs[i]``. Thread-safe."""

    def __init__(self, runs: Sequence[Run | PartialRun | RunHead]) -> None:
        self.heads = list(runs)
        self._loaded: list[Run | PartialRun | None] = [
            None if isinstance(run, RunHead) else run for run in self.heads
        ]
        self._locks = [threading.Lock() for _ in self.heads]
        self._indexes: dict[int, dict[str, Any]] = {}
        self._lines: dict[int, _Lines] = {}  # runs not read yet, by their checked lines
        self._lines_lock = threading.Lock()
        self._scores = [self._score_metric(run) for run in self.heads]
        self._table_metrics = tuple(n for n, m in available_metrics().items() if m.in_table)

    def __len__(self) -> int:
        return len(self.heads)

    def run(self, i: int) -> Run | PartialRun:
        """Run ``i`` with its results, read now if it was given by its head
        (:class:`~himga.runs.RunReadError` when they cannot be: changed since, say)."""
        with self._locks[i]:  # read once, however many requests ask at once
            loaded = self._loaded[i]
            if loaded is None:
                loaded = self._loaded[i] = load_run(self.heads[i].path)
                with self._lines_lock:
                    self._lines.pop(i, None)  # read whole: the lines are not needed now
            return loaded

    def _source(self, i: int) -> _Source:
        """Run ``i``'s questions: from its results once read, else from the lines of its
        ``results.jsonl`` if their checksum is the manifest's, else read now."""
        loaded = self._loaded[i]
        if loaded is not None:
            return _Loaded(loaded)
        head = self.heads[i]
        if isinstance(head, RunHead) and head.manifest.results_sha256 is not None:
            with self._lines_lock:
                if i in self._lines:
                    return self._lines[i]
                try:
                    data = (head.path / "results.jsonl").read_bytes()
                except OSError:
                    data = None
                if data is not None and (
                    hashlib.sha256(data).hexdigest() == head.manifest.results_sha256
                ):
                    lines = data.split(b"\n")
                    if lines and not lines[-1]:
                        lines.pop()
                    self._lines[i] = _Lines(lines)
                    return self._lines[i]
        return _Loaded(self.run(i))  # which raises what is wrong, if anything

    def _from_source(self, i: int, make: Callable[[_Source], _T]) -> _T:
        """``make`` over run ``i``'s questions (:meth:`_source`); over its results read
        whole if its lines cannot be parsed (the read then says why)."""
        source = self._source(i)
        if isinstance(source, _Lines):
            try:
                return make(source)
            except (KeyError, TypeError, ValueError):
                pass
        return make(_Loaded(self.run(i)))

    def prefetch(self, budget: int = PREFETCH_BYTES) -> threading.Thread:
        """Read the runs' results on a daemon thread, in order, while their
        ``results.jsonl`` files together stay within ``budget`` bytes, so a run's pages
        are ready when asked for (a request meanwhile waits for the one reading, never
        reads twice); a run that cannot be read is left for a request to report."""

        def read() -> None:
            left = budget
            for i, head in enumerate(self.heads):
                if self._loaded[i] is not None:
                    continue
                try:
                    left -= (head.path / "results.jsonl").stat().st_size
                except OSError:
                    continue
                if left < 0:
                    return
                with contextlib.suppress(Exception):  # its page says why
                    self.run(i)

        thread = threading.Thread(target=read, name="himga-view-prefetch", daemon=True)
        thread.start()
        return thread

    @staticmethod
    def _score_metric(run: Run | PartialRun | RunHead) -> str | None:
        overall = run.metrics.get("overall", {})
        # the per-question score the list shows and the diff subtracts: the headline's metric
        return next((m for m in HEADLINE_METRICS if _number(overall.get(m)) is not None), None)

    def leaderboard(self, *, measure: bool = False) -> dict[str, Any]:
        """Every run's entry, with the metric columns any of them has a value for. The
        measurements of the results (latency, context size) are in the entries of runs
        whose results are read; ``measure`` reads every run's first (:meth:`entry` gives
        one run's)."""
        registry = available_metrics()
        entries = [self.entry(i, measure=measure) for i in range(len(self.heads))]
        shown = [
            {"key": name, "title": metric.title}
            for name, metric in registry.items()
            if metric.in_table and any(_has(entry, name) for entry in entries)
        ]
        return {"columns": shown, "ks": list(RANK_KS), "runs": entries}

    def entry(self, i: int, *, measure: bool = True) -> dict[str, Any]:
        """Run ``i``'s leaderboard entry; with ``measure`` its results are read for the
        retrieval latency p50/p95 and the context size (``measured``: whether they are in)."""
        head = self.heads[i]
        run = self.run(i) if measure else self._loaded[i]
        metrics = head.metrics
        blocks: dict[str, Mapping[str, Any]] = {"overall": metrics.get("overall", {})}
        blocks |= metrics.get("by_category", {})
        entry: dict[str, Any] = {
            "id": i,
            "path": str(head.path),
            "label": head.label,
            "dataset": head.dataset_name,
            "status": run_status(head),
            "blocks": {
                name: {k: v for k, v in block.items() if _number(v) is not None}
                for name, block in blocks.items()
            },
            "intervals": _intervals(blocks),
            "score": self._scores[i],
            "recall": [_number(blocks["overall"].get(f"recall@{k}")) for k in RANK_KS],
            "measured": run is not None,
            "latency_p50_s": None,
            "latency_p95_s": None,
            "context_chars": None,
        }
        if run is not None:
            ok = [r for r in run.results if r.memory_error is None]
            latencies = [r.retrieval_latency_s for r in ok]
            chars = [len(r.context) for r in ok]
            entry |= {
                "latency_p50_s": percentile(latencies, 0.5),
                "latency_p95_s": percentile(latencies, 0.95),
                "context_chars": sum(chars) / len(chars) if chars else None,
            }
        if isinstance(head, PartialRun):
            identity = head.identity
            judge = identity.get("judge")
            entry |= {
                "arm": None,
                "done": len(head.results),
                "memory": identity.get("memory_spec"),
                "arguments": identity.get("memory_arguments") or {},
                "total": head.planned,
                "date": head.started_at,
                "judge_model": None if not isinstance(judge, dict) else judge.get("model"),
                "wall_time_s": None,
                "cost": None,
            }
            return entry
        manifest = head.manifest
        costs = manifest.costs
        phases = () if costs is None else costs.phases.phases
        entry |= {
            "arm": ARM_TITLES[arm_of(manifest)],
            # a finished run answered every question it planned (its results are them)
            "done": manifest.dataset.questions,
            "memory": manifest.memory.spec,
            "arguments": dict(manifest.memory.arguments),
            "total": manifest.dataset.questions,
            "date": manifest.started_at,
            "judge_model": None if manifest.judge is None else manifest.judge.get("model"),
            "wall_time_s": manifest.wall_time_s,
            "cost": None
            if costs is None
            else {
                "calls": sum(p.calls for p in phases),
                "input_tokens": sum(p.input_tokens for p in phases),
                "output_tokens": sum(p.output_tokens for p in phases),
            },
        }
        return entry

    def questions(
        self,
        i: int,
        *,
        category: str = "",
        outcome: str = "",
        disagree: bool = False,
        page: int = 0,
    ) -> dict[str, Any]:
        """Page ``page`` (of :data:`PAGE` questions) of run ``i``'s questions in the run's
        order, those of ``category`` and ``outcome`` (one of :data:`OUTCOMES`; ``""``:
        any), with ``disagree`` those on which the judged runs' verdicts differ: ``total``
        questions chosen, each row ``[n, sample, question id, category, the question's
        first characters, outcome, score]``."""
        if not outcome and not disagree:
            return self._page_by_category(i, category, page)
        index = self.index(i)
        split = self._split() if disagree else None
        chosen = [
            n
            for n in range(len(index["sample"]))
            if (not category or index["categories"][index["category"][n]] == category)
            and (not outcome or OUTCOMES[index["outcome"][n]] == outcome)
            and (split is None or (index["sample"][n], index["question_id"][n]) in split)
        ]
        rows = [
            [
                n,
                index["sample"][n],
                index["question_id"][n],
                index["categories"][index["category"][n]],
                index["text"][n],
                OUTCOMES[index["outcome"][n]],
                index["score"][n],
            ]
            for n in chosen[page * PAGE : (page + 1) * PAGE]
        ]
        return self._page(i, index["categories"], index["score_metric"], len(chosen), page, rows)

    def _page(
        self,
        i: int,
        categories: list[str],
        metric: str | None,
        total: int,
        page: int,
        rows: list[list[Any]],
    ) -> dict[str, Any]:
        return {
            "run": i,
            "categories": categories,
            "outcomes": list(OUTCOMES),
            "score_metric": metric,
            "total": total,
            "page": page,
            "rows": rows,
        }

    def _page_by_category(self, i: int, category: str, page: int) -> dict[str, Any]:
        """:meth:`questions` filtered by category alone: the outcome and score of the page's
        questions only, not of the whole run, and before the run is read whole (the first
        page of a 10,000-question run without reading or indexing it all)."""

        def make(source: _Source) -> dict[str, Any]:
            each = source.categories()
            chosen = [n for n, found in enumerate(each) if not category or found == category]
            rows = []
            for n in chosen[page * PAGE : (page + 1) * PAGE]:
                question = source.question(n)
                found, score = self._judged(i, question)
                result = question.result
                text = result.question[:_TEXT_SHOWN]
                row = [n, result.sample_id, result.question_id, result.category, text]
                rows.append([*row, OUTCOMES[found], score])
            categories = list(dict.fromkeys(each))
            return self._page(i, categories, self._scores[i], len(chosen), page, rows)

        return self._from_source(i, make)

    def _judged(self, i: int, question: _Question) -> tuple[int, float | None]:
        """The question's outcome (its index in :data:`OUTCOMES`) and score."""
        metric = self._scores[i]
        score = None if metric is None else self._metrics(question, metric)[metric]
        return _outcome(question), _number(score)

    def _split(self) -> set[tuple[str, str]]:
        """The questions (sample, question id) given different verdicts by the judged runs."""
        verdicts: dict[tuple[str, str], set[int]] = {}
        for j, score in enumerate(self._scores):
            if score != "judge":
                continue
            index = self.index(j)
            for n, found in enumerate(index["outcome"]):
                if OUTCOMES[found] in ("correct", "wrong"):
                    key = (index["sample"][n], index["question_id"][n])
                    verdicts.setdefault(key, set()).add(found)
        return {key for key, found in verdicts.items() if len(found) > 1}

    def index(self, i: int) -> dict[str, Any]:
        """Run ``i``'s question index: parallel arrays, one element per question in the
        run's order; ``category`` and ``outcome`` index ``categories`` and ``outcomes``,
        ``score`` is the question's value of ``score_metric`` (``None`` without one).
        Built once: do not change it."""
        run = self.run(i)
        with self._locks[i]:  # built once per run
            if i not in self._indexes:
                self._indexes[i] = self._index(i, run)
            return self._indexes[i]

    def _index(self, i: int, run: Run | PartialRun) -> dict[str, Any]:
        metric = self._scores[i]
        categories: dict[str, int] = {}
        columns: dict[str, list[Any]] = {
            name: [] for name in ("sample", "question_id", "category", "outcome", "score", "text")
        }
        for n, result in enumerate(run.results):
            columns["sample"].append(result.sample_id)
            columns["question_id"].append(result.question_id)
            columns["category"].append(categories.setdefault(result.category, len(categories)))
            found, score = self._judged(i, _Question.of(run, n))
            columns["outcome"].append(found)
            columns["score"].append(score)
            columns["text"].append(result.question[:_TEXT_SHOWN])
        return {
            "run": i,
            "categories": list(categories),
            "outcomes": list(OUTCOMES),
            "score_metric": metric,
            **columns,
        }

    @staticmethod
    def _metrics(question: _Question, *only: str) -> dict[str, float | None]:
        """The question's scores: those named in ``only``, or all."""
        value = None if math.isnan(question.judge) else question.judge
        return question_scores(question.result, value, only=only or None)

    def question(self, i: int, n: int) -> dict[str, Any]:
        """Question ``n`` of run ``i`` in full: the result record, its verdict, outcome and
        the spans of the evidence texts in its context; ``IndexError`` when there is none.
        Made before the run is read whole, from its line."""

        def make(source: _Source) -> dict[str, Any]:
            if not 0 <= n < len(source):
                raise IndexError(f"run {i} has no question {n}")
            question = source.question(n)
            result = question.result
            record = result.to_dict()
            record |= {
                "run": i,
                "index": n,
                "judge": None if math.isnan(question.judge) else question.judge,
                "judge_error": question.judge_error,
                "outcome": OUTCOMES[_outcome(question)],
                "evidence_spans": evidence_spans(result.context, result.evidence_texts),
                "metrics": {  # those of the tables, by title
                    available_metrics()[name].title: _number(value)
                    for name, value in self._metrics(question, *self._table_metrics).items()
                    if _number(value) is not None
                },
            }
            return record

        return self._from_source(i, make)


def _intervals(blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Each block's 95% intervals by metric key: the judge's Wilson interval, where the
    run's metrics have one (none for partial-credit verdicts, or a run written before)."""
    found: dict[str, dict[str, list[float]]] = {}
    for name, block in blocks.items():
        bounds = judge_interval(block)
        if bounds is not None:
            found[name] = {"judge": list(bounds)}
    return found


def _has(entry: Mapping[str, Any], name: str) -> bool:
    return any(name in block for block in entry["blocks"].values())

"""himga's first answer-accuracy numbers: the arms' runs exported to docs/answers/ and tabled.

The runs themselves are made by ``himga eval`` and ``himga judge`` (hours of CPU; the
commands are in docs/answers.md); this script only reads their run directories::

    uv run python -m bench.answers JUDGED=ANSWERED [...] --to docs/answers
    uv run python -m bench.answers RUN [...] --to docs/answers/panel200

Each arm is two runs of the same questions: ANSWERED answered them (``--no-judge``; its
manifest holds the answering's tokens and seconds), JUDGED re-ran it with the judge,
its answers served from ANSWERED's LLM cache (checked here: the same predictions), and
``himga judge`` added the other judges to it. An arm given as one RUN was answered
with ``--no-judge`` and every judge added by ``himga judge``: it is both. For each arm,
``docs/answers/<arm>/``:
JUDGED's ``manifest.json`` and ``metrics.json`` as written, ANSWERED's manifest as
``answering-manifest.json``, and ``questions.jsonl``: one line a question with its ids,
category, the model's answer, token counts and latencies, every judge's verdict and every
per-question metric himga scores (``question_scores``) -- but none of the dataset's
text (question, gold answer, evidence, retrieved context): LoCoMo is CC BY-NC and is
never copied into this repository; the ids join each line back to ``locomo10.json``.
Then ``docs/answers/table.md``: one row per arm, judge accuracy per category with
its Wilson 95% interval, token F1 and BLEU-1 (LoCoMo's official scorers), the share
of questions whose evidence reached the prompt, and tokens and seconds per phase,
every figure from the run directory named in its row; with judges added by ``himga
judge``, each one's calls, tokens and seconds (its manifest entry's ``costs``); with
two arms or more that share two judges, ``compare.md``: ``himga compare``'s output of
the arms (every judge's accuracy, whether the ranking holds under each, the rank-flip
and winner-change rates), then those rates for each pair of judges alone; and with
self-test records under ``judge-tests/`` (or ``--judge-tests DIR``; ``himga
judge-test --json``), their acceptance rates.

With ``--errata NAME_OR_FILE`` (``himga errata fetch locomo-audit`` first), and with or
without arms, ``docs/answers/gold-errors.md`` is written from the exported records:
each arm's judge accuracy over the headline questions under every judge, raw, with the
questions whose gold the errata call wrong excluded, and the ceiling
(:func:`himga.runs._gold_errors.score_gold_errors`, as ``himga report --errata``),
and ``summary.md``: one row per judge, every arm's raw and errata-masked accuracy and
the judge's self-test beside them (the README's table)::

    uv run python -m bench.answers --errata locomo-audit --to docs/answers
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shutil
import statistics
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from himga.benchmarks import get_benchmark
from himga.benchmarks._errata import Errata, read_errata
from himga.eval import question_scores
from himga.eval._agreement import cohen_kappa, fleiss_kappa, one_sided
from himga.eval._intervals import Proportion, wilson_interval
from himga.eval._paired import DEFAULT_RESAMPLES
from himga.runs import Run, RunDir, compare_runs, format_comparison
from himga.runs._gold_errors import GoldErrorAccuracy, score_gold_errors
from himga.runs._judges import judges_comparison

__all__ = [
    "arm_name",
    "export",
    "gold_errors_table",
    "judge_costs_table",
    "main",
    "pairwise_flips_table",
    "self_tests_table",
    "summary_table",
    "table",
]

#: What the dataset holds (the license forbids copying it here); ids join it back.
_DATASET_TEXT = frozenset({"question", "answer", "evidence_texts", "context", "gold"})


def arm_name(run: Run) -> str:
    """The arm a run is: ``oracle``, or its memory spec (``null``: LLM only)."""
    return "oracle" if run.manifest.arm == "oracle" else run.manifest.memory.spec


def judge_name(judge_id: str) -> str:
    """A judge id (``provider:model:prompt``) with the model's path cut to its file stem."""
    provider, _, rest = judge_id.partition(":")
    model, _, prompt = rest.rpartition(":")
    return f"{Path(model).stem if provider == 'local' else model}:{prompt}"


def judges_of(run: Run) -> dict[str, list[float]]:
    """Every judge's per-question scores, by :func:`judge_name` (NaN: no verdict), the
    run's own judge first."""
    return {judge_name(judge_id): list(scores) for judge_id, scores in run.judges.items()}


#: What the judged run served from the cache: the answering run's own values replace it.
_ANSWERING = ("latency_s", "input_tokens", "output_tokens")


def export(run: Run, answered: Run, dest: Path) -> None:
    """``run``'s manifest, metrics and text-free per-question records into ``dest``, each
    record's answering latency and tokens taken from ``answered`` (in ``run`` they came
    from the LLM cache)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "metrics.json"):
        shutil.copyfile(run.path / name, dest / name)
    judges = judges_of(run)
    answering = {(r.sample_id, r.question_id): r for r in answered.results}
    lines = []
    for index, result in enumerate(run.results):
        record = {
            key: value
            for key, value in result.to_dict().items()
            if key not in _DATASET_TEXT and key != "ranked_turn_ids"
        }
        source = answering[(result.sample_id, result.question_id)]
        record |= {name: getattr(source, name) for name in _ANSWERING}
        if result.ranked_turn_ids is not None:
            record["top10_turn_ids"] = list(result.ranked_turn_ids[:10])
        verdicts = {name: scores[index] for name, scores in judges.items()}
        record["verdicts"] = {k: None if math.isnan(v) else v for k, v in verdicts.items()}
        first = next(iter(judges.values()), None)
        judge = None if first is None or math.isnan(first[index]) else first[index]
        record["scores"] = question_scores(result, judge)
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    (dest / "questions.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def _accuracy(scores: Sequence[float]) -> str:
    judged = [s for s in scores if not math.isnan(s)]
    if not judged:
        return "-"
    p = wilson_interval(round(sum(judged)), len(judged))
    return "-" if p.rate is None else _interval(p.rate, p)


def _mean(values: Sequence[float | None]) -> str:
    kept = [v for v in values if v is not None]
    return "-" if not kept else f"{statistics.fmean(kept):.3f}"


def _phase(run: Run, name: str) -> Mapping[str, Any]:
    costs = run.manifest.costs
    phases = [] if costs is None else costs.to_dict().get("phases", [])
    return next((p for p in phases if p.get("phase") == name), {})


def table(runs: Sequence[tuple[Run, Run]], *, judge: str | None = None) -> str:
    """The markdown table of the arms, ``(judged, answered)`` runs each, under ``judge``
    (default: each run's own)."""
    dataset = runs[0][0].dataset_name
    categories = list(get_benchmark(dataset).categories)
    excluded = get_benchmark(dataset).headline_excludes
    headline = "accuracy (" + ", ".join(f"no {c}" for c in sorted(excluded)) + ")"
    head = ["arm", "n", headline, "accuracy (all)", *categories]
    head += ["F1", "BLEU-1", "evidence in prompt"]
    head += ["answer tokens in/out per q", "answer s/q (median)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run, answered in runs:
        judges = judges_of(run)
        scores = judges.get(judge or "", next(iter(judges.values()), []))
        per = [question_scores(r) for r in run.results]
        kept = [s for s, r in zip(scores, run.results, strict=True) if r.category not in excluded]
        cells = [arm_name(run), str(len(run.results)), _accuracy(kept), _accuracy(scores)]
        for category in categories:
            chosen = [
                s for s, r in zip(scores, run.results, strict=False) if r.category == category
            ]
            cells.append(_accuracy(chosen))
        cells.append(_mean([p.get("f1") for p in per]))
        cells.append(_mean([p.get("bleu1") for p in per]))
        cells.append(_mean([p.get("context_recall_any") for p in per]))
        answering = _phase(answered, "answering")
        calls = answering.get("calls") or 1
        cells.append(
            f"{answering.get('input_tokens', 0) / calls:.0f} / "
            f"{answering.get('output_tokens', 0) / calls:.1f}"
        )
        latencies = [r.latency_s for r in answered.results if r.latency_s is not None]
        cells.append("-" if not latencies else f"{statistics.median(latencies):.1f}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def costs_table(runs: Sequence[tuple[Run, Run]]) -> str:
    """Calls, tokens in / out and model seconds of the answering (from the answering run)
    and of the eval's judging (from the judged run), and each run's wall time."""
    lines = [
        "| arm | answering calls | tokens in / out | model s | wall s | judging calls "
        "| tokens in / out | model s | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run, answered in runs:
        cells = [arm_name(run)]
        for phase, source in (("answering", answered), ("judging", run)):
            found = _phase(source, phase)
            if not found:  # answered with --no-judge: the judges' own costs are apart
                cells += ["-"] * 4
                continue
            cells += [
                str(found.get("calls", 0)),
                f"{found.get('input_tokens', 0):,} / {found.get('output_tokens', 0):,}",
                f"{found.get('seconds', 0.0):.0f}",
                f"{source.manifest.wall_time_s:.0f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def judge_costs_table(runs: Sequence[Run]) -> str:
    """Each judge ``himga judge`` added to each run: its calls, tokens in / out and
    seconds (the manifest entry's ``costs``) and the questions it left without a verdict."""
    lines = [
        "| arm | judge | calls | failed | tokens in / out | model s | no verdict |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for entry in run.manifest.judge_entries():
            costs = entry.get("costs")
            if not isinstance(costs, Mapping):
                continue
            name = judge_name(str(entry["id"]))
            lines.append(
                f"| {arm_name(run)} | {name} | {costs['calls']:,} | {costs['failed_calls']} | "
                f"{costs['input_tokens']:,} / {costs['output_tokens']:,} | "
                f"{costs['seconds']:.0f} | {len(entry.get('errors') or [])} |"
            )
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def self_tests_table(records: Sequence[Path]) -> str:
    """The ``himga judge-test --json`` records as one row per judge: each answer set's
    acceptance (accepted / judged and Wilson 95%) and whether the judge passed."""
    if not records:
        return ""
    found = [json.loads(path.read_text("utf-8")) for path in sorted(records)]
    sets = [entry["name"] for entry in found[0]["sets"]]
    lines = [
        "| judge | n | "
        + " | ".join(f"{s} ({e['expects']})" for s, e in zip(sets, found[0]["sets"], strict=True))
        + " | passed |",
        "|---|---:|" + "---:|" * len(sets) + "---|",
    ]
    for record in found:
        name = _self_test_judge(record)
        cells = []
        for entry in record["sets"]:
            low, high = entry["ci95"] or (None, None)
            bounds = "" if low is None else f" [{low:.2f}, {high:.2f}]"
            cells.append(f"{entry['accepted']}/{entry['judged']}{bounds}")
        lines.append(
            f"| {name} | {record['questions']} | "
            + " | ".join(cells)
            + f" | {'yes' if record['passed'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _self_test_judge(record: Mapping[str, Any]) -> str:
    """A ``himga judge-test --json`` record's judge as :func:`judge_name` names it."""
    judge = record["judge"]
    return f"{Path(str(judge['model'])).stem}:{judge['prompt']}"


def pairwise_flips_table(a: Run, b: Run) -> str:
    """For each pair of the judges both runs have, ``himga compare``'s "under every judge"
    of that pair alone (:func:`~himga.runs._judges.judges_comparison`, 10,000 paired
    resamples, seed 0): each judge's difference B - A over the headline questions, and
    the pair's rank-flip and winner-change rates: which pair of judges disagrees on the
    ranking, where the panel's rates say only that some pair does."""
    where = {(r.sample_id, r.question_id): i for i, r in enumerate(b.results)}
    aligned = [[where[(r.sample_id, r.question_id)] for r in a.results]]
    names = [name for name in a.judges if name in b.judges]
    lines = [
        "| judge X | judge Y | Δ under X | Δ under Y | rank-flip rate | winner-change rate |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for x, y in itertools.combinations(names, 2):
        (row,) = judges_comparison(
            [a, b], aligned, resamples=DEFAULT_RESAMPLES, seed=0, judges=(x, y)
        )
        dx, dy = (row["accuracy"][n]["difference"] for n in (x, y))
        lines.append(
            f"| {judge_name(x)} | {judge_name(y)} | {_signed(dx)} | {_signed(dy)} | "
            f"{_rate(row['rank_flip_rate'])} | {_rate(row['winner_change_rate'])} |"
        )
    return "\n".join(lines) + "\n"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def judges_table(runs: Sequence[Run]) -> str:
    """Every judge's accuracy (all questions, Wilson 95%) on each run that has several,
    then per run the pairwise Cohen's kappa and the share one accepts and the other
    rejects, and Fleiss' kappa over all of them."""
    panels = [run for run in runs if len(run.judges) > 1]
    if not panels:
        return ""
    names = list(judges_of(panels[0]))
    lines = ["| judge | " + " | ".join(arm_name(r) for r in panels) + " |"]
    lines.append("|---|" + "---|" * len(panels))
    for name in names:
        cells = [_accuracy(judges_of(run).get(name, [])) for run in panels]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for run in panels:
        judged = judges_of(run)
        lines += [
            "",
            f"**{arm_name(run)}**: Cohen's kappa (below the diagonal) and the share "
            "of answers the row's judge accepts and the column's rejects (above)",
            "",
        ]
        lines.append("| | " + " | ".join(judged) + " |")
        lines.append("|---|" + "---|" * len(judged))
        for i, a in enumerate(judged):
            cells = []
            for j, b in enumerate(judged):
                if i == j:
                    cells.append("-")
                    continue
                value = (
                    cohen_kappa(judged[a], judged[b]) if j < i else one_sided(judged[a], judged[b])
                )
                cells.append("undefined" if value is None else f"{value:.2f}")
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
        fleiss = fleiss_kappa(list(judged.values()))
        lines += [
            "",
            f"Fleiss' kappa over the {len(judged)} judges: "
            + ("undefined" if fleiss is None else f"{fleiss:.2f}"),
        ]
    return "\n".join(lines) + "\n"


def _interval(value: float | None, interval: Proportion | None = None) -> str:
    if value is None:
        return "-"
    if interval is None or interval.low is None or interval.high is None:
        return f"{value:.2f}"
    return f"{value:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def _model_files(exported: Path) -> dict[str, str]:
    """The SHA-256 of each local model file the exported records name (its stem), from
    the committed manifests' reader and judges and the judge self-test records."""
    found: dict[str, str] = {}
    identities: list[Mapping[str, Any]] = []
    for manifest in exported.glob("*/manifest.json"):
        data = json.loads(manifest.read_text("utf-8"))
        identities += [data.get("llm") or {}, *(data.get("judges") or [])]
    for record in exported.glob("judge-tests/*.json"):
        identities.append(json.loads(record.read_text("utf-8")).get("judge") or {})
    for identity in identities:
        weights = identity.get("weights")
        if isinstance(weights, dict) and "sha256" in weights:
            found[Path(str(identity.get("model"))).stem] = str(weights["sha256"])
    return found


def _gold_error_rows(
    exported: Path, errata: Errata
) -> Iterator[tuple[str, str, GoldErrorAccuracy]]:
    """Per arm exported under ``exported`` (``<arm>/questions.jsonl``) and per judge of
    its records: the arm, the judge and the headline accuracies under ``errata``."""
    for questions in sorted(exported.glob("*/questions.jsonl")):
        records = [json.loads(line) for line in questions.read_text("utf-8").splitlines()]
        excluded = get_benchmark(records[0]["dataset"]).headline_excludes
        headline = [r for r in records if r["category"] not in excluded]
        for judge in records[0]["verdicts"]:
            scored = [
                (r["question_id"] in errata.entries, float(r["verdicts"][judge]))
                for r in headline
                if r["verdicts"][judge] is not None
            ]
            yield questions.parent.name, judge, score_gold_errors(questions.parent.name, scored)


def gold_errors_table(exported: Path, errata: Errata) -> str:
    """Per arm exported under ``exported`` (``<arm>/questions.jsonl``) and per judge of
    its records: the headline questions judged, how many the errata name, the raw
    accuracy, the accuracy without them and the ceiling, Wilson 95%; the reader and each
    judge named with its model file's SHA-256."""
    files = _model_files(exported)

    def named(stem: str) -> str:
        return f"{stem} (SHA-256 `{files[stem][:12]}…`)" if stem in files else stem

    readers = sorted(
        {
            Path(str(json.loads(p.read_text("utf-8"))["llm"]["model"])).stem
            for p in exported.glob("*/manifest.json")
        }
    )
    lines = [
        f"Errata `{Path(errata.source).name}` (sha256 `{errata.sha256}`): "
        f"{len(errata.entries):,} LoCoMo-10 questions whose gold answer the audit judges "
        "wrong. Judge accuracy over the headline (non-adversarial) questions, Wilson 95%. "
        f"Reader: {', '.join(named(r) for r in readers)}; each judge is its model file and "
        "its prompt (LoCoMo's `official` or himga's `strict`).",
        "",
        "| arm | judge | judge model SHA-256 | judged | audited wrong | raw "
        "| excluding gold errors | ceiling |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm, judge, row in _gold_error_rows(exported, errata):
        sha = files.get(judge.rpartition(":")[0], "not recorded")
        lines.append(
            f"| {arm} | {judge} | `{sha[:12]}…` | {row.judged} | {row.audited_wrong} | "
            f"{_interval(row.raw, row.raw_ci)} | "
            f"{_interval(row.excluding, row.excluding_ci)} | {_interval(row.ceiling)} |"
        )
    return "\n".join(lines) + "\n"


def summary_table(exported: Path, errata: Errata, self_tests: Sequence[Path]) -> str:
    """One row per judge, the arms exported under ``exported`` side by side: each arm's
    headline accuracy raw and without the questions the errata call wrong (Wilson 95%),
    then the judge's self-test (:func:`self_tests_table`'s records, matched by model
    file stem and prompt): how much of the vague wrong set and of the exact gold it
    accepts, and whether it passed. The README's table."""
    arms: dict[str, dict[str, str]] = {}
    for arm, judge, found in _gold_error_rows(exported, errata):
        arms.setdefault(judge, {})[arm] = (
            f"{_interval(found.raw, found.raw_ci)} | "
            f"{_interval(found.excluding, found.excluding_ci)}"
        )
    tests = {}
    for path in self_tests:
        record = json.loads(path.read_text("utf-8"))
        sets = {entry["name"]: entry for entry in record["sets"]}
        tests[_self_test_judge(record)] = (
            f"{sets['vague']['accepted']}/{sets['vague']['judged']} | "
            f"{sets['exact']['accepted']}/{sets['exact']['judged']} | "
            + ("passes" if record["passed"] else "fails")
        )
    names = sorted({arm for row in arms.values() for arm in row})
    head = ["judge"]
    for arm in names:
        head += [f"`{arm}` raw", f"`{arm}` without gold errors"]
    head += ["accepts vague wrong", "accepts exact gold", "self-test"]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 2) + " --- |"]
    for judge, row in arms.items():
        cells = [row.get(arm, "- | -") for arm in names]
        lines.append(f"| {judge} | " + " | ".join(cells) + f" | {tests.get(judge, '- | - | -')} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arms", nargs="*", metavar="JUDGED=ANSWERED")
    parser.add_argument("--to", type=Path, default=Path("docs/answers"))
    parser.add_argument("--errata", metavar="NAME_OR_FILE")
    parser.add_argument(
        "--judge-tests",
        type=Path,
        metavar="DIR",
        help="the himga judge-test --json records to table (default: TO/judge-tests)",
    )
    args = parser.parse_args(argv)
    if not args.arms and args.errata is None:
        parser.error("give JUDGED=ANSWERED arms, --errata, or both")
    judge_tests = sorted((args.judge_tests or args.to / "judge-tests").glob("*.json"))
    if args.arms:
        _export_arms(args.arms, args.to, judge_tests)
    if args.errata is not None:
        errata = read_errata(args.errata)
        text = gold_errors_table(args.to, errata)
        (args.to / "gold-errors.md").write_text(text, "utf-8")
        print(text)
        summary = summary_table(args.to, errata, judge_tests)
        (args.to / "summary.md").write_text(summary, "utf-8")
        print(summary)


def _export_arms(arms: Sequence[str], to: Path, judge_tests: Sequence[Path]) -> None:
    """Each arm's run exported under ``to``, then ``table.md`` of them all."""
    runs = [_pair(arm) for arm in arms]
    for run, answered in runs:
        export(run, answered, to / arm_name(run))
        shutil.copyfile(
            answered.path / "manifest.json", to / arm_name(run) / "answering-manifest.json"
        )
    text = table(runs)
    judges = judges_table([run for run, _ in runs])
    if judges:
        text += "\n" + judges
    text += "\n" + costs_table(runs)
    judging = judge_costs_table([run for run, _ in runs])
    if judging:
        text += "\n" + judging
    tests = self_tests_table(judge_tests)
    if tests:
        text += "\nJudge self-tests (`himga judge-test`), accepted / judged, Wilson 95%:\n\n"
        text += tests
    (to / "table.md").write_text(text, "utf-8")
    print(text)
    panels = [run for run, _ in runs if len(run.judges) > 1]
    if len(panels) > 1:
        text = format_comparison(compare_runs(panels)) + "\n"
        for other in panels[1:]:
            text += (
                f"\n### Each pair of judges: B = `{other.path}` vs A = `{panels[0].path}`"
                " (overall)\n\n" + pairwise_flips_table(panels[0], other)
            )
        (to / "compare.md").write_text(text, "utf-8")


def _pair(arm: str) -> tuple[Run, Run]:
    """The judged and the answering run of ``JUDGED=ANSWERED``, checked to hold the same
    questions and predictions (the judged run's answers came from the other's cache);
    a lone ``RUN`` is both."""
    judged_path, _, answered_path = arm.partition("=")
    if not answered_path:
        run = RunDir(Path(judged_path)).read()
        return run, run
    judged, answered = RunDir(Path(judged_path)).read(), RunDir(Path(answered_path)).read()
    ours = [(r.question_id, r.prediction) for r in judged.results]
    theirs = [(r.question_id, r.prediction) for r in answered.results]
    if ours != theirs:
        raise SystemExit(f"{judged_path} and {answered_path} hold different answers")
    return judged, answered


if __name__ == "__main__":
    main()

"""Every judge of a run in the outputs: per-judge accuracy with Wilson intervals, the
agreement between judges (``himga report``) and whether a ranking holds under every
judge (``himga compare``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from himga.eval import result_groups
from himga.eval._agreement import accepted, cohen_kappa, fleiss_kappa, one_sided, rank_flips
from himga.eval._intervals import Proportion, wilson_interval
from himga.eval._paired import paired_differences
from himga.runs._rundir import Run

__all__ = ["format_judges", "format_judges_comparison", "judges_comparison"]


def _accuracy(scores: Sequence[float], members: Sequence[int]) -> Proportion:
    verdicts = [v for i in members if (v := accepted(scores[i])) is not None]
    return wilson_interval(sum(verdicts), len(verdicts))


def _cell(found: Proportion) -> str:
    if found.rate is None or found.low is None or found.high is None:
        return "-"
    return f"{found.rate:.3f} [{found.low:.3f}, {found.high:.3f}] n={found.n}"


def _kappa(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def format_judges(run: Run) -> str:
    """The run's judges side by side, for a run with two or more (``""`` otherwise): each
    judge's accuracy (share of answers it accepts, a score of 0.5 or more) per category
    with its Wilson 95% interval; Cohen's kappa of each pair and the share one accepts
    and the other rejects, over every question; Fleiss' kappa per category."""
    judges = dict(run.judges)
    if len(judges) < 2:
        return ""
    names = list(judges)
    groups = result_groups(run.results)
    lines = [
        "Judges (accuracy: share of answers accepted, Wilson 95% interval, n judged):",
        "",
        "| category | " + " | ".join(f"`{n}`" for n in names) + " | Fleiss' kappa |",
        "| --- |" + " ---: |" * (len(names) + 1),
    ]
    for group, members in groups.items():
        cells = [_cell(_accuracy(judges[n], members)) for n in names]
        fleiss = fleiss_kappa([[judges[n][i] for i in members] for n in names])
        lines.append(f"| {group} | " + " | ".join(cells) + f" | {_kappa(fleiss)} |")
    every = groups["overall_with_adversarial"]
    lines += [
        "",
        "Cohen's kappa of each pair over every question (below the diagonal), and the "
        "share of answers the row's judge accepts and the column's rejects (above):",
        "",
        "| judge | " + " | ".join(f"`{n}`" for n in names) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    for r, row in enumerate(names):
        cells = []
        for c, column in enumerate(names):
            a = [judges[row][i] for i in every]
            b = [judges[column][i] for i in every]
            if r == c:
                cells.append("1")
            elif r > c:
                cells.append(_kappa(cohen_kappa(a, b)))
            else:
                share = one_sided(a, b)
                cells.append("-" if share is None else f"{share:.3f}")
        lines.append(f"| `{row}` | " + " | ".join(cells) + " |")
    if run.stale_judges:
        lines += [
            "",
            f"Not shown: {', '.join(f'`{n}`' for n in run.stale_judges)}, who judged answers "
            "the run has since replaced (it was resumed and re-answered).",
        ]
    return "\n".join(lines)


def judges_comparison(
    runs: Sequence[Run],
    aligned: Sequence[Sequence[int]],
    *,
    resamples: int,
    seed: int,
    judges: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per run after the first (``aligned``: the row of each of the first run's questions
    in it), over the judges every run has (or those of ``judges`` every run has) and the
    headline (``overall``) questions: each judge's accuracy in both runs and the paired
    difference's bootstrap interval and permutation p-value (as ``compare``'s), whether B
    beats A under every judge, the rank-flip rate and the winner-change rate
    (:func:`~himga.eval._agreement.rank_flips`). Empty when the runs share fewer than
    two of those judges."""
    baseline = runs[0]
    chosen = baseline.judges if judges is None else judges
    shared = [n for n in chosen if all(n in run.judges for run in runs)]
    if len(shared) < 2:
        return []
    members = result_groups(baseline.results)["overall"]
    found = []
    for other, positions in zip(runs[1:], aligned, strict=True):
        a = {n: [_verdict(baseline.judges[n][i]) for i in members] for n in shared}
        b = {n: [_verdict(other.judges[n][positions[i]]) for i in members] for n in shared}
        flips = rank_flips(a, b, resamples=resamples, seed=seed)
        paired = paired_differences(
            [[a[n][i] for n in shared] for i in range(len(members))],
            [[b[n][i] for n in shared] for i in range(len(members))],
            resamples=resamples,
            seed=seed,
        )
        found.append(
            {
                "run": str(other.path),
                "accuracy": {
                    n: {
                        "a": _mean(a[n]),
                        "b": _mean(b[n]),
                        "difference": flips.differences[n],
                        "ci95": [d.ci_low, d.ci_high],
                        "p": d.p_value,
                    }
                    for n, d in zip(shared, paired, strict=True)
                },
                "holds_under_every_judge": flips.holds,
                "rank_flip_rate": flips.flip_rate,
                "winner_change_rate": flips.winner_change_rate,
            }
        )
    return found


def _verdict(score: float) -> float:
    verdict = accepted(score)
    return math.nan if verdict is None else float(verdict)


def _mean(scores: Sequence[float]) -> float | None:
    judged = [s for s in scores if not math.isnan(s)]
    return sum(judged) / len(judged) if judged else None


def format_judges_comparison(found: Sequence[Mapping[str, Any]], resamples: int) -> list[str]:
    """:func:`judges_comparison` as markdown lines (none when it is empty)."""
    lines: list[str] = []
    for row in found:
        names = list(row["accuracy"])
        lines += [
            "",
            f"### Under every judge: B = `{row['run']}` vs A (overall, accuracy)",
            "",
            "| judge | A | B | Δ | 95% CI | p |",
            "| --- | ---: | ---: | ---: | :---: | ---: |",
        ]
        for name in names:
            cell = row["accuracy"][name]
            low, high = cell["ci95"]
            interval = "-" if low is None else f"[{low:+.3f}, {high:+.3f}]"
            p = cell["p"]
            lines.append(
                f"| `{name}` | {_number(cell['a'])} | {_number(cell['b'])} "
                f"| {_number(cell['difference'], signed=True)} | {interval} "
                f"| {'-' if p is None else f'{p:.4f}'} |"
            )
        rate, change = row["rank_flip_rate"], row["winner_change_rate"]
        said = _ranking(
            [row["accuracy"][name]["difference"] for name in names],
            holds=row["holds_under_every_judge"],
        )
        lines += [
            "",
            f"{said} Of {resamples:,} paired bootstrap resamples, the judges disagree on the "
            f"sign of Δ in {_number(rate)} (rank-flip rate; a tie under one judge counts) "
            f"and on the winner in {_number(change)} (one judge has B ahead, another A).",
        ]
    return lines


def _ranking(differences: Sequence[float | None], *, holds: bool) -> str:
    """What the judges' differences (B - A) say of the ranking, in one sentence."""
    known = [d for d in differences if d is not None]
    if holds:
        return f"B {'beats' if known[0] > 0 else 'trails'} A under every judge."
    if any(d > 0 for d in known) and any(d < 0 for d in known):
        return "Which run wins depends on the judge."
    if any(d != 0 for d in known):
        return (
            f"B {'beats' if any(d > 0 for d in known) else 'trails'} A under some judges "
            "and ties it (or is not scored) under the others."
        )
    return "B and A tie under every judge that scored both."


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"

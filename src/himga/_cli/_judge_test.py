"""``himga judge-test``: how often a judge accepts answers known to be wrong."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from himga._cli._exits import EXIT_INCOMPLETE
from himga._cli._options import add_judge_options, judge_base_url_error, path
from himga._redact import redact
from himga.eval._judge_test import (
    ACCEPTED_AT,
    DEFAULT_MAX_FALSE_ACCEPT,
    DEFAULT_MAX_FALSE_REJECT,
    DEFAULT_QUESTIONS,
    JudgeTestResult,
)

__all__ = ["EXIT_FAILED", "EXIT_INCOMPLETE", "register", "run"]

#: The judge accepted more wrong answers than ``--max-false-accept`` allows.
EXIT_FAILED = 1


def register(commands: Any) -> None:
    """Add the ``judge-test`` subcommand."""
    parser = commands.add_parser(
        "judge-test",
        help="measure how often a judge accepts wrong answers made from a benchmark's gold",
        description=(
            "Draw --n questions of the dataset (seeded) and make, from their gold, four "
            "answer sets: vague (topical, no answer), specific-wrong (another date, number, "
            "name or phrase of the same conversation), abstention ('Not mentioned in the "
            "conversation' where an answer exists) -- all three must be rejected -- and "
            "padded-correct (the gold plus an irrelevant clause; its acceptance is "
            "reported). Each answer is judged by the benchmark's own judge with the given "
            f"model; a score >= {ACCEPTED_AT:g} counts as accepted. Prints each set's "
            "acceptance rate with its Wilson 95% interval. Exit status: 0 passed, "
            f"{EXIT_FAILED} a wrong set accepted more than --max-false-accept or the gold "
            "itself rejected more than --max-false-reject, 2 usage or "
            f"configuration error, {EXIT_INCOMPLETE} passed but some answers got no "
            "verdict (a failed call or an unparseable reply)."
        ),
    )
    add_judge_options(
        parser,
        choices=("anthropic", "openai", "local"),
        llm_help="the judge's provider: anthropic, openai or local (key and base URL from the "
        "SDK's environment variables, as himga eval)",
        model_help="the judge's model (default: the provider's; local: the GGUF file's path)",
        prompt_help="the dataset's judge prompt to test (default: official; see docs/judges.md)",
    )
    parser.add_argument("--dataset", default="locomo", help="dataset name (default: locomo)")
    parser.add_argument("--data-path", type=path, default=None, help="dataset file or directory")
    parser.add_argument(
        "--n",
        type=int,
        default=DEFAULT_QUESTIONS,
        metavar="N",
        help=f"questions per set (default {DEFAULT_QUESTIONS}; all eligible ones if fewer)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    parser.add_argument(
        "--max-false-accept",
        type=float,
        default=DEFAULT_MAX_FALSE_ACCEPT,
        metavar="RATE",
        help=f"the largest share of a wrong set the judge may accept (default "
        f"{DEFAULT_MAX_FALSE_ACCEPT:g}: one in ten; the 'be generous' gpt-4o-mini judge "
        "measured by dial481/locomo-audit accepts 10.6%% of specific and 62.8%% of vague "
        "wrong answers)",
    )
    parser.add_argument(
        "--max-false-reject",
        type=float,
        default=DEFAULT_MAX_FALSE_REJECT,
        metavar="RATE",
        help=f"the largest share of the gold answers themselves (the exact set) the judge "
        f"may reject (default {DEFAULT_MAX_FALSE_REJECT:g}): a judge that rejects everything "
        "fails here",
    )
    parser.add_argument(
        "--llm-cache",
        type=path,
        default=None,
        metavar="PATH",
        help="answer repeated judge requests from this SQLite file (created if missing): "
        "a rerun with the same seed asks the model nothing",
    )
    parser.add_argument(
        "--json", type=path, default=None, metavar="FILE", help="also write the result here"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(handler=run)


def _usage_error(args: argparse.Namespace) -> str | None:
    if args.n < 1:
        return f"--n must be >= 1, got {args.n}"
    for option in ("max_false_accept", "max_false_reject"):
        value = getattr(args, option)
        if not 0.0 <= value <= 1.0:
            return f"--{option.replace('_', '-')} must be in [0, 1], got {value}"
    url_error = judge_base_url_error(args.judge_base_url)
    if url_error is not None:
        return url_error
    if args.json is not None and args.json.is_dir():
        return f"--json {args.json} is a directory: give a file name"
    return None


def format_result(result: JudgeTestResult) -> str:
    """The per-set table and the verdict, as printed."""
    judge = result.judge
    lines = [
        f"judge self-test of {judge.get('provider')} model {judge.get('model')} on "
        f"{result.dataset}: {result.questions} of {result.eligible} eligible questions "
        f"(seed {result.seed})",
        "",
        f"{'set':<16}{'expects':<9}{'judged':>7}{'accepted':>10}{'rate':>8}  95% CI"
        f"{'':<10}{'n/a':>5}{'errors':>8}",
    ]
    for s in result.sets:
        share = s.accepted
        rate = "-" if share.rate is None else f"{share.rate:.1%}"
        interval = (
            "-"
            if share.low is None or share.high is None
            else f"[{share.low:.1%}, {share.high:.1%}]"
        )
        lines.append(
            f"{s.name:<16}{s.expects:<9}{share.n:>7}{share.successes:>10}{rate:>8}  "
            f"{interval:<16}{s.unavailable:>5}{s.errors:>8}"
        )
    lines.append("")
    failures = result.failures()
    if failures:
        lines.append(
            f"FAILED (--max-false-accept {result.max_false_accept:g}, "
            f"--max-false-reject {result.max_false_reject:g}):"
        )
        lines += [f"  {failure}" for failure in failures]
    else:
        lines.append(
            f"passed: every wrong set accepted at most {result.max_false_accept:.1%} "
            f"(--max-false-accept), the gold rejected at most {result.max_false_reject:.1%} "
            "(--max-false-reject)"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Judge the sets and print them; see the command's description for the exit status."""
    from himga._extras import MissingExtraError
    from himga.benchmarks import BenchmarkLoadError, load_dataset
    from himga.data import DatasetError, DatasetNotFoundError, UnknownDatasetError
    from himga.eval._judge_test import run_judge_test
    from himga.llm import LLMConfigError, get_client
    from himga.runs._files import write_text_atomic

    problem = _usage_error(args)
    if problem is not None:
        print(f"himga judge-test: {problem}", file=sys.stderr)
        return 2
    try:
        llm = get_client(
            args.judge_llm,
            model=args.judge_model,
            base_url=args.judge_base_url,
            cache=args.llm_cache,
        )
        samples = load_dataset(args.dataset, path=args.data_path)
        result = run_judge_test(
            samples,
            dataset=args.dataset,
            llm=llm,
            n=args.n,
            seed=args.seed,
            max_false_accept=args.max_false_accept,
            max_false_reject=args.max_false_reject,
            show_progress=not args.no_progress,
            prompt=args.judge_prompt,
        )
    except (
        BenchmarkLoadError,
        DatasetError,
        DatasetNotFoundError,
        LLMConfigError,
        MissingExtraError,
        UnknownDatasetError,
        ValueError,
    ) as exc:
        print(redact(f"himga judge-test: error: {exc}"), file=sys.stderr)
        return 2
    print(format_result(result))
    if args.json is not None:
        try:
            write_text_atomic(args.json, json.dumps(result.to_dict(), indent=2) + "\n")
        except OSError as exc:
            print(
                f"himga judge-test: error: cannot write {args.json}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    if not result.passed:
        return EXIT_FAILED
    if result.errors:
        print(
            f"himga judge-test: incomplete: {result.errors} answers got no verdict",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return 0

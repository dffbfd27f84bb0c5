"""``himga judge RUN``: add a judge (model x prompt) to a finished run, without re-answering."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from himga._cli._exits import EXIT_INCOMPLETE
from himga._cli._judge_test import format_result
from himga._cli._options import add_judge_options, path

if TYPE_CHECKING:
    from himga.llm import LLMClient

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``judge`` subcommand."""
    parser = commands.add_parser(
        "judge",
        help="add a judge (model and judge prompt) to a finished run without re-answering",
        description=(
            "Judge the answers of the finished run RUN with another judge: --judge-llm's "
            "model --judge-model and the judge prompt --judge-prompt of the run's "
            "benchmark (default: official). Each verdict is appended to RUN/verdicts.jsonl "
            "under the judge's id (provider:model:prompt) as it arrives; only verdicts not "
            "there yet are asked, so a rerun asks none and a killed one resumes. The judge "
            "is added to the manifest's judges. Refused when the run's answers changed "
            "since this judge judged them. Exit status: 0 judged, "
            f"{EXIT_INCOMPLETE} judged with some answers unjudged, 2 cannot judge."
        ),
    )
    parser.add_argument("run", type=path, metavar="RUN", help="a finished himga eval run")
    add_judge_options(
        parser,
        llm_help="anthropic, openai or local",
        model_help="the judge's model (default: the provider's)",
        model_metavar="MODEL",
        prompt_help="the judge prompt of the run's benchmark (default: official; see "
        "docs/judges.md)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="judge calls in flight (default: the client's)",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="first run the judge's self-test (himga judge-test's sets and thresholds) on "
        "the run's dataset with this judge and prompt; its result goes into the judge's "
        "manifest entry (self_test), passed or not",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def _self_test(args: argparse.Namespace, llm: LLMClient) -> dict[str, Any] | None:
    """The judge's self-test on the run's dataset, printed, as the manifest keeps it;
    ``None`` without ``--self-test`` or a manifest (then the judging says why)."""
    from himga.benchmarks import load_dataset
    from himga.eval._judge_test import run_judge_test
    from himga.runs import RunDir

    if not args.self_test or not (args.run / "manifest.json").is_file():
        return None
    dataset = RunDir(args.run).read_manifest().dataset
    recorded = Path(dataset.path)
    samples = load_dataset(dataset.name, path=recorded if recorded.is_file() else None)
    result = run_judge_test(
        samples,
        dataset=dataset.name,
        llm=llm,
        prompt=args.judge_prompt,
        show_progress=not args.no_progress,
    )
    print(format_result(result))
    return result.to_dict()


def run(args: argparse.Namespace) -> int:
    """Judge the run; 2 when it cannot be judged, 3 when some answers got no verdict."""
    from himga._errors import HimgaError
    from himga.llm import get_client
    from himga.runs import judge_run

    if args.concurrency is not None and args.concurrency < 1:
        print("himga judge: error: --concurrency must be >= 1", file=sys.stderr)
        return 2
    try:
        llm = get_client(args.judge_llm, model=args.judge_model, base_url=args.judge_base_url)
        self_test = _self_test(args, llm)
        judged = judge_run(
            args.run,
            llm,
            prompt=args.judge_prompt,
            base_url=args.judge_base_url,
            self_test=self_test,
            notify=lambda note: print(f"himga judge: note: {note}", file=sys.stderr),
            show_progress=not args.no_progress,
            max_concurrency=args.concurrency,
        )
    except HimgaError as exc:
        print(f"himga judge: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"himga judge: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except ValueError as exc:  # the self-test's: the dataset has no judge or no gold
        print(f"himga judge: error: {exc}", file=sys.stderr)
        return 2
    scores = [s for s in judged.scores if s == s]
    accuracy = f"{sum(scores) / len(scores):.3f}" if scores else "-"
    print(
        f"judge {judged.id}: {judged.asked} verdicts asked, {len(scores)} answers judged "
        f"(mean score {accuracy}), {len(judged.scores.errors)} not judged; wrote "
        f"{args.run}/verdicts.jsonl, manifest.json"
    )
    return EXIT_INCOMPLETE if judged.scores.errors else 0

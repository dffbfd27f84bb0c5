"""Cost of the conformance kit and of runtime protocol checks, measured in one run.

* ``check_memory`` with default settings (``max_examples=100``) on ``NullMemory``
  (the baseline), on a list-based keyword memory and on its searchable variant
  (which adds ``search-returns-hits`` and the search calls), in the default mode
  and with ``deterministic=True``: wall time of a whole run, median and spread of
  ``--runs`` runs (target: <= ~2 s each in the default mode), and the ratio to
  the baseline.
* Mutation score: every broken memory of ``tests/mutants.py`` checked ``--rounds``
  times (fresh random seeds) at ``max_examples`` 25 (the test suite's dev profile)
  and 100 (the default): the share of runs whose ``ContractViolation`` names the
  intended contract id (``BROKEN_IF_DETERMINISTIC`` checked with
  ``deterministic=True``), and the legal memories' false-alarm rate (in both
  modes for the deterministic ones).
* ``isinstance(x, BaseMemory)`` (a runtime-checkable Protocol: it looks up every
  protocol member) against a nominal ``isinstance`` check of the same object
  against its own class: ns per call, median of ``--repeats`` timings, and their
  ratio.

Run::

    uv run python bench/bench_check.py

Prints a markdown table and a JSON manifest (Python version, machine, settings).
Not a test: numbers vary with the machine; compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga import __version__
from himga.memory import BaseMemory, NullMemory
from himga.testing import DEFAULT_MAX_EXAMPLES, ContractViolation, check_memory


def _time_check(factory: Callable[[], BaseMemory], runs: int, deterministic: bool) -> list[float]:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        check_memory(factory, deterministic=deterministic)
        seconds.append(time.perf_counter() - start)
    return seconds


def _ns_per_call(statement: Callable[[], object], number: int, repeats: int) -> float:
    timings = timeit.repeat(statement, number=number, repeat=repeats)
    return statistics.median(timings) / number * 1e9


def _mutants() -> Any:
    """``tests.mutants``: the broken and legal memories, and ``ListMemory``."""
    # They live with the tests; make the project root importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    return importlib.import_module("tests.mutants")


def _mutation_score(rounds: int, max_examples: int) -> tuple[int, int, int, int, list[str]]:
    """(runs naming the intended id, broken runs, legal runs flagged, legal runs, misses).

    A miss is ``"<memory>: <verdict>"``, the verdict being the id reported
    instead of the intended one, ``passed`` for a broken memory that went
    unflagged, or the id a legal memory was flagged under.
    """
    mutants = _mutants()
    broken = [(name, f, cid, False) for name, (f, cid) in mutants.BROKEN.items()]
    broken += [(n, f, cid, True) for n, (f, cid) in mutants.BROKEN_IF_DETERMINISTIC.items()]
    legal = [(name, factory, False) for name, factory in mutants.LEGAL.items()]
    legal += [
        (name, factory, True)
        for name, factory in mutants.LEGAL.items()
        if name != "RandomSampleMemory"  # random: cannot promise determinism
    ]
    legal += [
        (name, factory, False) for name, (factory, _) in mutants.BROKEN_IF_DETERMINISTIC.items()
    ]
    right = 0
    misses: list[str] = []
    for name, factory, contract_id, deterministic in broken:
        for _ in range(rounds):
            try:
                check_memory(factory, max_examples=max_examples, deterministic=deterministic)
            except ContractViolation as violation:
                right += violation.contract_id == contract_id
                if violation.contract_id != contract_id:
                    misses.append(f"{name}: {violation.contract_id}")
            else:
                misses.append(f"{name}: passed")
    false_alarms = 0
    for name, factory, deterministic in legal:
        for _ in range(rounds):
            try:
                check_memory(factory, max_examples=max_examples, deterministic=deterministic)
            except ContractViolation as violation:
                false_alarms += 1
                misses.append(f"{name} (deterministic={deterministic}): {violation.contract_id}")
    return right, len(broken) * rounds, false_alarms, len(legal) * rounds, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="check_memory runs per memory")
    parser.add_argument("--repeats", type=int, default=7, help="timeit repeats for isinstance")
    parser.add_argument("--number", type=int, default=200_000, help="calls per timeit repeat")
    parser.add_argument("--rounds", type=int, default=5, help="mutation-score runs per memory")
    parser.add_argument(
        "--skip-score", action="store_true", help="time the kit only (no mutation score)"
    )
    args = parser.parse_args()

    check_memory(NullMemory, max_examples=5)  # warm-up: imports, strategy compilation
    rows = []
    mutants = _mutants()
    memories = (
        ("NullMemory", NullMemory),
        ("ListMemory", mutants.ListMemory),
        ("SearchableListMemory", mutants.SearchableListMemory),
    )
    for deterministic in (False, True):
        for name, factory in memories:
            seconds = _time_check(factory, args.runs, deterministic)
            mode = "deterministic" if deterministic else "default"
            rows.append((name, mode, statistics.median(seconds), min(seconds), max(seconds)))
    baseline = rows[0][2]

    memory = NullMemory()
    protocol_ns = _ns_per_call(lambda: isinstance(memory, BaseMemory), args.number, args.repeats)
    nominal_ns = _ns_per_call(lambda: isinstance(memory, NullMemory), args.number, args.repeats)

    print(f"check_memory, default settings (max_examples={DEFAULT_MAX_EXAMPLES}), {args.runs} runs")
    print()
    print("| memory | mode | median s | min s | max s | vs NullMemory default |")
    print("|---|---|---:|---:|---:|---:|")
    for name, mode, median, low, high in rows:
        ratio = median / baseline
        print(f"| {name} | {mode} | {median:.2f} | {low:.2f} | {high:.2f} | {ratio:.2f}x |")
    print()
    print("| check | ns/call (median) |")
    print("|---|---:|")
    print(f"| isinstance(x, BaseMemory) | {protocol_ns:.0f} |")
    print(f"| isinstance(x, NullMemory) (nominal) | {nominal_ns:.0f} |")
    print(f"| ratio | {protocol_ns / nominal_ns:.0f}x |")
    print()
    scores = {}
    print(f"mutation score, {args.rounds} runs per memory")
    print()
    print("| max_examples | broken flagged under the right id | legal memories flagged |")
    print("|---:|---:|---:|")
    for examples in () if args.skip_score else (25, DEFAULT_MAX_EXAMPLES):
        right, runs, alarms, legal_runs, misses = _mutation_score(args.rounds, examples)
        scores[examples] = {
            "right_id": right,
            "runs": runs,
            "false_alarms": alarms,
            "misses": misses,
        }
        print(f"| {examples} | {right}/{runs} ({right / runs:.0%}) | {alarms}/{legal_runs} |")
    print()
    manifest = {
        "himga": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "runs": args.runs,
        "timeit": {"number": args.number, "repeats": args.repeats},
        "check_memory_seconds": {f"{n} {mode}": round(m, 3) for n, mode, m, _, _ in rows},
        "isinstance_ns": {"protocol": round(protocol_ns, 1), "nominal": round(nominal_ns, 1)},
        "mutation_score": scores,
    }
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()

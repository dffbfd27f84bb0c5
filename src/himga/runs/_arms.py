"""The arms of an experiment that separate what memory contributes from what the reader does.

A run is one of four arms: the *oracle* arm (the context is only the question's gold
evidence turns: what the reader answers given perfect memory), the *full-context* arm
(the memory ``full``: the whole history, as far as the context allows), the *LLM-only*
arm (the memory ``null``: no context, what the reader knows or guesses) and the
*memory* arm (any other memory). Given runs of one question set under several arms,
:func:`arm_split` places each memory between the LLM-only floor and the oracle ceiling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from himga.runs._manifest import Manifest

__all__ = ["ARM_TITLES", "ArmKind", "arm_of", "arm_split", "format_arm_split"]

ArmKind = Literal["oracle", "full", "llm-only", "memory"]

#: How tables and reports name each arm.
ARM_TITLES: Mapping[ArmKind, str] = {
    "oracle": "oracle (gold evidence)",
    "full": "full context",
    "llm-only": "LLM only",
    "memory": "memory",
}


def arm_of(manifest: Manifest) -> ArmKind:
    """The run's arm: ``oracle`` when its manifest says ``"arm": "oracle"``, else by its
    memory: ``full`` is the full-context arm, ``null`` the LLM-only arm, any other the
    memory arm (a manifest without ``arm``, written before arms existed, included)."""
    if manifest.arm == "oracle":
        return "oracle"
    if manifest.memory.spec == "full":
        return "full"
    if manifest.memory.spec == "null":
        return "llm-only"
    return "memory"


def arm_split(accuracies: Sequence[tuple[str, ArmKind, float]]) -> dict[str, Any]:
    """Where each run's accuracy lies between the reader without memory and the reader
    with perfect memory: ``accuracies`` are ``(label, arm, accuracy)`` of runs of one
    question set (each over the same questions). JSON-ready:

    * ``floor`` / ``ceiling``: the LLM-only and oracle accuracies (the first run of each
      arm; ``None`` when no run is of that arm);
    * ``runs``: each run's ``label``, ``arm``, ``accuracy`` and, for a memory or full-context
      run, ``over_floor`` (accuracy − floor: what its context adds), ``to_ceiling``
      (ceiling − accuracy: what it loses to retrieval) and ``share`` (over_floor as a
      share of ceiling − floor; ``None`` unless the ceiling is above the floor);
    * ``reader_gap``: 1 − ceiling, what the reader (with the judge and the gold) misses
      even given the gold evidence.
    """
    floor = next((a for _, arm, a in accuracies if arm == "llm-only"), None)
    ceiling = next((a for _, arm, a in accuracies if arm == "oracle"), None)
    runs: list[dict[str, Any]] = []
    for label, arm, accuracy in accuracies:
        entry: dict[str, Any] = {"label": label, "arm": arm, "accuracy": accuracy}
        if arm in ("memory", "full"):
            over = None if floor is None else accuracy - floor
            to = None if ceiling is None else ceiling - accuracy
            span = None if floor is None or ceiling is None else ceiling - floor
            share = None if over is None or span is None or span <= 0 else over / span
            entry |= {"over_floor": over, "to_ceiling": to, "share": share}
        runs.append(entry)
    return {
        "floor": floor,
        "ceiling": ceiling,
        "reader_gap": None if ceiling is None else 1 - ceiling,
        "runs": runs,
    }


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def format_arm_split(split: Mapping[str, Any], *, metric: str, group: str, n: int) -> list[str]:
    """The markdown lines of :func:`arm_split`: a table of every run with its arm, then
    what the floor and the ceiling say, or which arm is missing to say it."""
    lines = [
        f"### Memory and reader: {metric} over {group}, the {n:,} questions every run judged",
        "",
        "| run | arm | accuracy | over LLM only | to oracle | share of the oracle's gain |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for run in split["runs"]:
        share = run.get("share")
        lines.append(
            f"| {run['label']} | {ARM_TITLES[run['arm']]} | {run['accuracy']:.3f} "
            f"| {_signed(run.get('over_floor'))} | {_signed(run.get('to_ceiling'))} "
            f"| {'-' if share is None else f'{share:.0%}'} |"
        )
    floor, ceiling = split["floor"], split["ceiling"]
    lines.append("")
    if floor is None or ceiling is None:
        missing = " and ".join(
            title
            for title, value in (("an LLM-only run (`--memory null`)", floor),
                                 ("an oracle run (`--arm oracle`)", ceiling))
            if value is None
        )  # fmt: skip
        lines.append(
            f"To say how much of a score is memory and how much is reader, add {missing} "
            "of the same questions."
        )
        return lines
    lines.append(
        f"The reader answers {floor:.3f} with no context (LLM only) and {ceiling:.3f} "
        f"given only the gold evidence (oracle): a memory's part is what it adds over "
        f"{floor:.3f}, at most {ceiling - floor:+.3f}; the {split['reader_gap']:.3f} the "
        "oracle still misses is the reader's (with the judge's and the gold's), and no "
        "memory recovers it. The share is (accuracy − LLM only) / (oracle − LLM only)."
    )
    return lines

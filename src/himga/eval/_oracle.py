"""The oracle arm: a question's context is its gold evidence turns, not a memory's retrieval.

The one place gold decides what the agent sees, and only when a run asks for it
(``--arm oracle``; :attr:`~himga.eval.EvalOptions.arm`). It bounds the reader: with
exactly the turns the answer rests on, how often does this model answer right? Set
beside the LLM-only arm (``null``) and a memory, it says how much of a score is
memory and how much is reader. Its runs say ``arm: oracle`` in their identity and
manifest, so no table can take one for a memory's.
"""

from __future__ import annotations

from typing import Literal

from himga.data.schema import QAPair, Sample
from himga.memory._text import format_line

__all__ = ["ARMS", "Arm", "oracle_context"]

#: ``memory``: the context is the memory's retrieval; ``oracle``: the gold evidence turns.
Arm = Literal["memory", "oracle"]
ARMS: tuple[Arm, ...] = ("memory", "oracle")


def oracle_context(sample: Sample, qa: QAPair) -> str:
    """The lines of ``qa``'s evidence turns (``QAPair.evidence_turns``), in conversation
    order, each written as the reference memories write a turn
    (``"[<session date>] <speaker>: <content>"``); ``""`` when the question names no
    evidence turn of ``sample`` (it is then asked with no context, as by ``null``)."""
    wanted = set(qa.evidence_turns)
    return "\n".join(
        format_line(message, session)
        for session, message in sample.iter_turns()
        if message.turn_id is not None and message.turn_id in wanted
    )

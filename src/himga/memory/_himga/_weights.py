"""The weights of HiMGA's score: levels, edge types, date cues, seeds."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

__all__ = ["HiMGAWeights"]


@dataclass(frozen=True, slots=True)
class HiMGAWeights:
    """How much each level and each edge type counts in a turn's score.

    A turn's base score is the weighted sum of its BM25 scores at each level
    (``turn``, ``window1``, ``window2``, ``session``; each divided by its best
    score for the query, so weights compare across levels); with an embedder,
    plus ``dense`` times its embedding cosine and ``expansion`` times the BM25
    score of the conversation's words nearest the query by embedding. The
    ``seeds`` best turns then spread their base score one hop along each edge
    type, scaled by that type's weight (``temporal``, ``membership``, ``qa``, ``entity``,
    ``semantic``). What a turn gets from its context levels and along the edges
    counts ``terseness ** verbosity`` times, terseness (in (0, 1]) being the
    conversation's median turn length over its speaker's, capped at 1: the
    verbose side of a lopsided conversation leans less on its neighbours. When
    the query names a date, a turn's score is multiplied by ``1 + date * fit``,
    ``fit`` in [0, 1] saying how well its session's date matches; when it names
    some of the speakers (not all), their turns' by ``1 + speaker``; when it
    asks what "you" said or did ("the restaurant you recommended"), the
    assistant's turns (role ``"assistant"``) count as named and lean on their
    context undamped. Every weight is a finite number >= 0; ``seeds`` >= 1.
    """

    turn: float = 1.0
    window1: float = 1.0
    window2: float = 1.0
    session: float = 0.6
    dense: float = 0.5
    expansion: float = 1.0
    temporal: float = 0.0
    membership: float = 0.0
    qa: float = 0.1
    entity: float = 0.4
    semantic: float = 0.2
    verbosity: float = 1.0
    date: float = 1.0
    speaker: float = 0.4
    seeds: int = 40

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "seeds":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"HiMGAWeights: seeds must be an int >= 1, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"HiMGAWeights: {field.name} must be a number, got {value!r}")
            elif not (0 <= value < math.inf):
                raise ValueError(
                    f"HiMGAWeights: {field.name} must be a finite number >= 0, got {value!r}"
                )

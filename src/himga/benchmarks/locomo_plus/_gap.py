"""LoCoMo-Plus ``time_gap`` phrases ("two weeks later") as a number of days.

Upstream (``parse_time_gap`` of ``data/build_conv.py``, xjtuleeyf/Locomo-Plus at
059f4e3) finds the first ``<count> <unit>`` in the phrase, with a count of digits,
``one`` .. ``twelve``, ``a`` or ``an``, and a unit of weeks, months or years
(7, 30 and 365 days). Whatever it cannot read it takes as 0 days, which puts the
cue right before the trigger: in the published file that happens to 15 of 401
items ("several months later" 11 times, "several years later", "several weeks
later", "a couple of months later", "a few weeks later").

This parser reads the same pairs (so the 386 other items get upstream's number
of days), and also vague counts (:data:`VAGUE_COUNTS`) and days; a phrase it
cannot read raises :class:`TimeGapError` instead of becoming 0 days.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from himga._errors import HimgaError

__all__ = ["DAYS_PER_UNIT", "VAGUE_COUNTS", "TimeGapError", "parse_time_gap"]

#: Days per unit, as upstream counts them (a month is 30 days, a year 365).
DAYS_PER_UNIT: Mapping[str, int] = MappingProxyType({"day": 1, "week": 7, "month": 30, "year": 365})

#: Counts given to vague quantifiers upstream reads as 0 days: the smallest
#: number each is ordinarily used for ("several" and "a few" mean more than a couple).
VAGUE_COUNTS: Mapping[str, int] = MappingProxyType({"couple of": 2, "few": 3, "several": 3})

_NUMBER_WORDS = (
    *("one", "two", "three", "four", "five", "six"),
    *("seven", "eight", "nine", "ten", "eleven", "twelve"),
)
_MAX_DIGITS = 9
_COUNTS = {word: value for value, word in enumerate(_NUMBER_WORDS, start=1)}
_VAGUE = "|".join(re.escape(v).replace(r"\ ", r"\s+") for v in VAGUE_COUNTS)
_GAP = re.compile(
    rf"\b(?:an?\s+)?(?P<vague>{_VAGUE})\s*(?P<vague_unit>day|week|month|year)s?\b"
    rf"|\b(?P<count>\d+|{'|'.join(_NUMBER_WORDS)}|an?)\b\s*(?P<unit>day|week|month|year)s?\b"
)


class TimeGapError(HimgaError, ValueError):
    """A ``time_gap`` phrase names no amount of time this parser can read."""


def parse_time_gap(text: str) -> int:
    """The number of days a ``time_gap`` phrase such as ``"about six weeks later"`` spans.

    The first ``<count> <unit>`` in the (lower-cased) phrase counts; words around it
    ("about", "later", "after the birth") are ignored, as upstream ignores them.
    Counts: digits, ``one`` .. ``twelve``, ``a`` / ``an`` (1), and the vague
    quantifiers of :data:`VAGUE_COUNTS`; units: :data:`DAYS_PER_UNIT`, singular
    or plural. Raises :class:`TimeGapError` when the phrase has no such pair.
    """
    match = _GAP.search(text.lower())
    if match is None:
        raise TimeGapError(
            f"cannot read {text!r} as an amount of time (expected e.g. 'two weeks later', "
            f"'a month later', 'several months later')"
        )
    if match["vague"] is not None:
        vague = " ".join(match["vague"].split())
        return VAGUE_COUNTS[vague] * DAYS_PER_UNIT[match["vague_unit"]]
    count = match["count"]
    if count.isdigit() and len(count) > _MAX_DIGITS:
        # int() refuses over 4,300 digits, and no calendar spans such a gap anyway.
        raise TimeGapError(f"cannot read {text!r}: {len(count)} digits is no amount of time")
    number = int(count) if count.isdigit() else _COUNTS.get(count, 1)  # missing: "a" / "an"
    return number * DAYS_PER_UNIT[match["unit"]]

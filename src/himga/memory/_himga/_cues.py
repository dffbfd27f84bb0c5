"""Cues of a query, from its own words: which session dates it points at, whom it asks about."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from himga.memory._text import ENGLISH_MONTHS

__all__ = ["asks_what_you_did", "date_cue"]

# Case-sensitive: "May" names a month, "may" is a verb. Abbreviations need a capital too.
_MONTH = re.compile(
    r"\b(" + "|".join(m.capitalize() + "|" + m[:3].capitalize() for m in ENGLISH_MONTHS) + r")\b\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?,?)?(?:\s+((?:19|20)\d{2}))?"
)
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE
)
_LAST = re.compile(r"\b(yesterday|last\s+(?:week|month|year))\b", re.IGNORECASE)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

# "you" (optionally with an auxiliary) before a past tense, or "did/had you <verb>". A past
# tense is a word ending in -ed but not -eed ("you need" is present) or a common irregular one.
_IRREGULAR_PAST = (
    "said|told|gave|wrote|made|did|brought|sent|showed|shown|thought|found|taught|chose|drew|"
    "meant|came|got|went|saw|knew|left|began|spoke|felt"
)
_YOU_DID = re.compile(
    r"\b(?:did|didn't|had)\s+you\s+\w+"
    r"|\byou(?:'ve|'d|\s+have|\s+had|\s+just|\s+also|\s+once|\s+previously|\s+earlier)?\s+"
    r"(?:\w*[^e\W]ed|" + _IRREGULAR_PAST + r")\b",
    re.IGNORECASE,
)


def asks_what_you_did(query: str) -> bool:
    """Whether the query asks what its addressee ("you") said or did in the past.

    "you" before a past tense ("the restaurant you recommended", "you'd
    mentioned", "did you say"): a request ("can you remind me") or the present
    ("do you think") is not.
    """
    return _YOU_DID.search(query) is not None


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + month // 12, month % 12 + 1, 1)


def date_cue(query: str, dates: Sequence[datetime | None]) -> list[float] | None:
    """Per session, how well its date fits the query's date cues; ``None`` without any cue.

    Cues: a month name (capitalised, optionally with a day and a year: "in May",
    "October 13, 2023"), a bare year, and offsets from the latest session date
    -- the conversation's "now" -- ("two weeks ago", "yesterday", "last month").
    A session dated within the named period scores 1; within a month after it
    0.5, as people report past events a little later; otherwise 0. Undated
    sessions score 0.
    """
    windows: list[tuple[datetime, datetime, datetime]] = []  # (start, end, grace end)
    dated = [date for date in dates if date is not None]
    covered: list[tuple[int, int]] = []
    for match in _MONTH.finditer(query):
        month = ENGLISH_MONTHS.index(
            next(m for m in ENGLISH_MONTHS if m.startswith(match[1].lower()[:3]))
        )
        month += 1
        covered.append(match.span())
        years = [int(match[2])] if match[2] else sorted({date.year for date in dated})
        for year in years:
            start, end = datetime(year, month, 1), _month_end(year, month)
            windows.append((start, end, end + timedelta(days=31)))
    for match in _YEAR.finditer(query):
        if any(start <= match.start() < stop for start, stop in covered):
            continue
        year = int(match[1])
        windows.append((datetime(year, 1, 1), datetime(year + 1, 1, 1), datetime(year + 1, 2, 1)))
    if dated:
        now = max(dated)
        offsets = [
            _NUMBERS.get(m[1].lower(), 0) if not m[1].isdigit() else int(m[1])
            for m in _AGO.finditer(query)
        ]
        spans = [
            (offset * _UNIT_DAYS[m[2].lower()])
            for offset, m in zip(offsets, _AGO.finditer(query), strict=True)
        ]
        for m in _LAST.finditer(query):
            word = m[1].lower().split()[-1]
            spans.append(1 if word == "yesterday" else _UNIT_DAYS[word])
        for days in spans:
            slack = timedelta(days=max(2.0, days / 4))
            target = now - timedelta(days=days)
            windows.append((target - slack, target + slack, target + 2 * slack))
    if not windows:
        return None
    cue = []
    for date in dates:
        best = 0.0
        if date is not None:
            for start, end, grace in windows:
                if start <= date < end:
                    best = 1.0
                    break
                if end <= date < grace:
                    best = 0.5
        cue.append(best)
    return cue

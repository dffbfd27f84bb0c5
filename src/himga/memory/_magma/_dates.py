"""Time expressions in a turn, resolved against the date of the session it was said in.

Rule-based, like the released MAGMA's temporal parser: relative expressions
("yesterday", "last week", "three days ago", "last Friday") move from the session
date; absolute ones ("7 May 2023", "May 2023", "in 2022") stand alone. English only.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = ["ResolvedDate", "resolve_dates", "resolve_phrase"]


@dataclass(frozen=True, slots=True)
class ResolvedDate:
    """A time expression as said (``phrase``) and what it names (``value``, e.g. ``7 May 2023``)."""

    phrase: str
    value: str


_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_MONTH = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_WEEKDAY = "|".join(_WEEKDAYS)
_COUNT = "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True)) + r"|\d{1,3}"

_PATTERNS = [
    ("dmy", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+((?:19|20)\d\d)\b"),
    ("mdy", rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b"),
    ("my", rf"\b({_MONTH})\.?,?\s+((?:19|20)\d\d)\b"),
    ("ago", rf"\b({_COUNT})\s+(day|week|month|year)s?\s+ago\b"),
    ("rel_unit", r"\b(last|this|next|past)\s+(week|weekend|month|year)\b"),
    ("rel_weekday", rf"\b(last|this|next|on)\s+({_WEEKDAY})\b"),
    ("day_word", r"\b(yesterday|today|tonight|tomorrow|last night|the day before yesterday)\b"),
    ("year", r"\b(?:in|since|during|of)\s+((?:19|20)\d\d)\b"),
]
_SCANNER = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _PATTERNS), re.I)


def _day(d: date) -> str:
    return f"{d.day} {calendar.month_name[d.month]} {d.year}"


def _shift_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(d.day, calendar.monthrange(year, month + 1)[1]))


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS[word]


def _resolve(kind: str, groups: list[str], anchor: date | None) -> str | None:
    if kind == "dmy":
        day, month, year = int(groups[0]), _MONTHS[groups[1].lower()], int(groups[2])
        if day > calendar.monthrange(year, month)[1]:
            return None
        return _day(date(year, month, day))
    if kind == "mdy":
        month, day, year = _MONTHS[groups[0].lower()], int(groups[1]), int(groups[2])
        if day > calendar.monthrange(year, month)[1]:
            return None
        return _day(date(year, month, day))
    if kind == "my":
        return f"{calendar.month_name[_MONTHS[groups[0].lower()]]} {groups[1]}"
    if kind == "year":
        return groups[0]
    if anchor is None:
        return None
    if kind == "ago":
        n, unit = _count(groups[0]), groups[1].lower()
        if unit == "day":
            return _day(anchor - timedelta(days=n))
        if unit == "week":
            return f"the week of {_day(anchor - timedelta(weeks=n))}"
        if unit == "month":
            shifted = _shift_months(anchor, -n)
            return f"{calendar.month_name[shifted.month]} {shifted.year}"
        return str(anchor.year - n)
    if kind == "rel_unit":
        step = {"last": -1, "past": -1, "this": 0, "next": 1}[groups[0].lower()]
        unit = groups[1].lower()
        if unit in ("week", "weekend"):
            return f"the {unit} of {_day(anchor + timedelta(weeks=step))}"
        if unit == "month":
            shifted = _shift_months(anchor, step)
            return f"{calendar.month_name[shifted.month]} {shifted.year}"
        return str(anchor.year + step)
    if kind == "rel_weekday":
        which, weekday = groups[0].lower(), _WEEKDAYS[groups[1].lower()]
        back = (anchor.weekday() - weekday) % 7
        if which == "last":
            return _day(anchor - timedelta(days=back or 7))
        if which == "next":
            return _day(anchor + timedelta(days=(weekday - anchor.weekday()) % 7 or 7))
        # "on Friday" / "this Friday" in a conversation mostly report the past week.
        return _day(anchor - timedelta(days=back))
    offsets = {
        "yesterday": -1,
        "last night": -1,
        "the day before yesterday": -2,
        "today": 0,
        "tonight": 0,
        "tomorrow": 1,
    }
    return _day(anchor + timedelta(days=offsets[groups[0].lower()]))


def resolve_dates(text: str, anchor: datetime | None) -> tuple[ResolvedDate, ...]:
    """Every time expression of ``text`` that resolves, in order of appearance.

    Relative expressions need ``anchor`` (the session date) and are skipped
    without one; absolute dates are resolved regardless.
    """
    day = anchor.date() if anchor is not None else None
    found = []
    for match in _SCANNER.finditer(text):
        kind = match.lastgroup
        assert kind is not None
        groups = [g for g in match.groups()[match.re.groupindex[kind] :] if g is not None]
        value = _resolve(kind, groups, day)
        if value is not None:
            found.append(ResolvedDate(match.group(kind), value))
    return tuple(dict.fromkeys(found))


def resolve_phrase(phrase: str, anchor: datetime | None) -> ResolvedDate:
    """``phrase`` (a date an LLM extracted) resolved if it can be, else kept as said."""
    resolved = resolve_dates(phrase, anchor)
    return resolved[0] if resolved else ResolvedDate(phrase, phrase)

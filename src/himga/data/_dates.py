"""Parsing of the raw session timestamps found in the benchmarks."""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

__all__ = ["parse_session_date"]

# LongMemEval: "2023/05/20 (Sat) 02:21" -- the weekday is redundant and dropped.
_WEEKDAY = re.compile(r"\s*\([A-Za-z]{3}\)\s*")
# Fast path for LongMemEval's layout: strptime costs ~10 us a call (more for each
# format tried first), and LongMemEval_M has ~250k session dates.
_LONGMEMEVAL = re.compile(r"(\d{4})/(\d{2})/(\d{2}) \([A-Za-z]{3}\) (\d{2}):(\d{2})")
_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",  # LoCoMo, abbreviated month
    "%Y/%m/%d %H:%M",  # LongMemEval (weekday removed)
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d",
    "%d %B, %Y",  # LoCoMo event summaries: "8 May, 2023"
    "%d %B %Y",
)


@lru_cache(maxsize=4096)
def parse_session_date(raw: str) -> datetime | None:
    """Parse a benchmark timestamp; ``None`` when no known layout matches.

    Never raises: an unparseable date is kept raw in ``Session.date_str`` and
    simply has no parsed value.
    """
    match = _LONGMEMEVAL.fullmatch(raw)
    if match:
        year, month, day, hour, minute = (int(part) for part in match.groups())
        try:
            return datetime(year, month, day, hour, minute)
        except ValueError:
            return None
    text = " ".join(_WEEKDAY.sub(" ", raw).split())
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None

"""Text helpers shared by the reference memories: prompt lines and word tokens."""

from __future__ import annotations

import re
import unicodedata

from himga.data.schema import Message, Session

__all__ = ["ENGLISH_MONTHS", "ENGLISH_STOPWORDS", "format_line", "words"]

# Unicode-aware: letters and digits of any script; punctuation, symbols and emoji split words.
_WORD = re.compile(r"[^\W_]+")

# NLTK's English stopword list without its apostrophe forms, which splitting at
# punctuation turns into stubs the list already holds ("don't" -> "don", "t").
_STOPWORDS = """
    a about above after again against ain all am an and any are aren as at be because been
    before being below between both but by can couldn d did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just ll m ma me mightn more
    most mustn my myself needn no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    wouldn y you your yours yourself yourselves
"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_STOPWORDS.split())

#: The month names, lower case, January first (the date cues of HiMGA and MAGMA).
ENGLISH_MONTHS: tuple[str, ...] = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)


def words(text: str) -> list[str]:
    """The words of ``text`` in order: NFKC-normalised, case-folded, punctuation dropped.

    Stopwords are kept (callers filter with :data:`ENGLISH_STOPWORDS`). A run of
    letters without spaces is one word, so CJK text splits only at punctuation.
    """
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def format_line(message: Message, session: Session) -> str:
    """``"[<session date>] <speaker>: <content>"``; without the bracket when the date is unknown."""
    if session.date_str:
        return f"[{session.date_str}] {message.role}: {message.content}"
    return f"{message.role}: {message.content}"

"""What the built-in judges' :meth:`~himga.benchmarks.Judge.offline_reply` share.

An offline reply stands in for the judge model when there is none (the loopback
fake LLM): the judge reads its own filled prompt back into its fields and decides
a verdict from them by word overlap, then writes it as its model is asked to.
Nothing is copied from the prompt into the verdict: the echo of a judge prompt
holds the verdict words, which once scored every answer correct.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Collection, Sequence

__all__ = ["abstains", "covered", "format_fields", "slot_fields"]

_WORD = re.compile(r"[a-z0-9]+")
#: What an answer that declines to answer says (the agent's prompt asks for the first).
_ABSTAINED = ("not mentioned", "no information")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def covered(expected: str, response: str) -> float:
    """The share of ``expected``'s words (lower-cased, alphanumeric) that ``response``
    holds; 0.0 when ``expected`` has none."""
    wanted = _words(expected)
    return len(wanted & _words(response)) / len(wanted) if wanted else 0.0


def abstains(response: str) -> bool:
    """Whether ``response`` says the conversation does not hold the answer."""
    lowered = response.lower()
    return any(marker in lowered for marker in _ABSTAINED)


@functools.lru_cache(maxsize=256)
def _pattern(parts: tuple[tuple[str, str | None], ...]) -> re.Pattern[str]:
    """A pattern matching the template of ``parts`` (literal text, then a field or
    ``None``) filled with anything; a field named twice must hold the same text."""
    pieces: list[str] = []
    seen: set[str] = set()
    for literal, name in parts:
        pieces.append(re.escape(literal))
        if name is not None:
            pieces.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
            seen.add(name)
    return re.compile("".join(pieces), re.DOTALL)


def _fields(parts: Sequence[tuple[str, str | None]], text: str) -> dict[str, str] | None:
    found = _pattern(tuple(parts)).fullmatch(text)
    return None if found is None else found.groupdict()


def format_fields(template: str, text: str) -> dict[str, str] | None:
    """The value of each ``{field}`` of a :meth:`str.format` ``template`` in ``text``,
    ``None`` when ``text`` is not that template filled in."""
    parts = [(literal, name or None) for literal, name, _, _ in string.Formatter().parse(template)]
    return _fields(parts, text)


def slot_fields(template: str, text: str, slots: Collection[str]) -> dict[str, str] | None:
    """As :func:`format_fields` for a template whose fields are ``<name>`` slots; only
    the names in ``slots`` are fields (any other ``<...>`` is literal text)."""
    parts: list[tuple[str, str | None]] = []
    start = 0
    for slot in re.finditer(r"<(\w+)>", template):
        if slot[1] in slots:
            parts.append((template[start : slot.start()], slot[1]))
            start = slot.end()
    parts.append((template[start:], None))
    return _fields(parts, text)

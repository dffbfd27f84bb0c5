"""Generic entity mentions of a turn: proper nouns (with prefix aliases) and numbers.

Nothing here knows any dataset: a proper noun is a word written with a capital
letter where a sentence does not start, anywhere in the conversation; every
occurrence of it then counts, at a sentence start too. A shorter proper noun
that begins exactly one longer one ("Mel", "Melanie") is taken as its alias.
Rare content words are added by the index, which knows document frequencies.

A text is scanned once (:func:`scan`); what it mentions then follows from the
conversation's proper nouns and aliases (:func:`aliases`, :func:`resolve`), so
an index that grows re-scans nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from himga.memory._text import ENGLISH_STOPWORDS

__all__ = ["Scanned", "aliases", "entity_mentions", "resolve", "scan"]

# A word: a run of letters and digits. Only a word starting with a capital or a digit can
# be an entity; a word starting with an ASCII lower-case letter -- most words of English
# text -- is skipped by the pattern itself (the exact tests are then made in Python).
_CANDIDATE = re.compile(r"(?<![^\W_])[^\W_a-z][^\W_]*")
# Such a word where a sentence starts: at the text's start, or after a sentence end
# (``.!?:;"“”`` or a line break) and spaces. Every other occurrence is mid-sentence.
_SENTENCE_START = re.compile(r'(?:\A|[.!?\n:;"“”])[^\S\n]*([^\W_a-z][^\W_]*)')
_MIN_ALIAS = 3


@dataclass(frozen=True, slots=True)
class Scanned:
    """What one text can mention.

    ``capitalised``: the case-folded words it writes with a capital (anywhere);
    ``mid_sentence``: those of them, two letters or more and not stopwords,
    written so where no sentence starts (what makes a word a proper noun);
    ``numbers``: its ``"#:<digits>"`` keys.
    """

    capitalised: frozenset[str]
    mid_sentence: frozenset[str]
    numbers: frozenset[str]


def scan(text: str) -> Scanned:
    """The capitalised words and numbers of ``text`` (NFKC-normalised first)."""
    text = unicodedata.normalize("NFKC", text)
    found = _CANDIDATE.findall(text)
    capitalised = {word.casefold() for word in found if word[0].isupper()}
    numbers = {"#:" + word.lstrip("0") for word in found if len(word) >= 2 and word.isdigit()}
    # Counted in C (Counter over a list); a word is mid-sentence somewhere when it occurs
    # more often than at sentence starts.
    occurs = Counter(word for word in found if len(word) >= 2 and word[0].isupper())
    at_start = Counter(_SENTENCE_START.findall(text))
    mid_sentence = {
        key
        for word, count in occurs.items()
        if count > at_start[word] and (key := word.casefold()) not in ENGLISH_STOPWORDS
    }
    return Scanned(frozenset(capitalised), frozenset(mid_sentence), frozenset(numbers))


def aliases(proper: Iterable[str]) -> dict[str, str]:
    """Each proper noun (3 letters or more) that begins exactly one other -> that other."""
    alias: dict[str, str] = {}
    ordered = sorted(proper)
    for at, name in enumerate(ordered):
        # Sorted order puts the words that extend ``name`` right after it.
        end = at + 1
        while end < len(ordered) and end - at <= 2 and ordered[end].startswith(name):
            end += 1
        if len(name) >= _MIN_ALIAS and end - at == 2:
            alias[name] = ordered[at + 1]
    return alias


def resolve(scanned: Scanned, proper: frozenset[str] | set[str], alias: dict[str, str]) -> set[str]:
    """A scanned text's entity keys: ``"n:<word>"`` proper nouns, ``"#:<digits>"`` numbers."""
    keys = {"n:" + alias.get(key, key) for key in scanned.capitalised if key in proper}
    return keys | scanned.numbers


def entity_mentions(texts: Sequence[str]) -> list[set[str]]:
    """Per text, its entity keys: ``"n:<word>"`` proper nouns, ``"#:<digits>"`` numbers."""
    scanned = [scan(text) for text in texts]
    proper: set[str] = set().union(*(found.mid_sentence for found in scanned))
    alias = aliases(proper)
    return [resolve(found, proper, alias) for found in scanned]

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from himga.memory._text import ENGLISH_STOPWORDS

__all__ = ["Scanned", "aliases", "entity_mentions", "resolve", "scan"]

# A word: a run of letters and digits. Only a word starting with a capital or a digit can
# be an entity; a word starting with an ASCII lower-case letter -- most words of English
# text -- is skipped by the pattern itself (the exact test is then made in Python). Group 1
# is not empty when a sentence starts before the word: a sentence end ``.!?:;"“”`` or a line
# break, then only spaces (a text is scanned after a line break: its start is one too).
_CANDIDATE = re.compile(r'(?:([.!?\n:;"“”])[^\S\n]*)?(?<![^\W_])([^\W_a-z][^\W_]*)')
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
    text = "\n" + unicodedata.normalize("NFKC", text)
    capitalised: set[str] = set()
    mid_sentence: set[str] = set()
    numbers: set[str] = set()
    for sentence_start, word in _CANDIDATE.findall(text):
        if word[0].isupper():
            key = word.casefold()
            capitalised.add(key)
            if not sentence_start and len(word) >= 2 and key not in ENGLISH_STOPWORDS:
                mid_sentence.add(key)
        elif len(word) >= 2 and word.isdigit():
            numbers.add("#:" + word.lstrip("0"))
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

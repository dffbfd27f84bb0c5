"""Generic entity mentions of a turn: proper nouns (with prefix aliases) and numbers.

Nothing here knows any dataset: a proper noun is a word written with a capital
letter where a sentence does not start, anywhere in the conversation; every
occurrence of it then counts, at a sentence start too. A shorter proper noun
that begins exactly one longer one ("Mel", "Melanie") is taken as its alias.
Rare content words are added by the index, which knows document frequencies.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from himga.memory._text import ENGLISH_STOPWORDS

__all__ = ["entity_mentions"]

_TOKEN = re.compile(r"[^\W_]+")
_SENTENCE_END = frozenset('.!?\n:;"“”')
_MIN_ALIAS = 3


def _capitalised_mid_sentence(text: str) -> set[str]:
    found = set()
    for match in _TOKEN.finditer(text):
        word = match[0]
        if not word[0].isupper() or len(word) < 2:
            continue
        at = match.start() - 1
        while at >= 0 and text[at].isspace() and text[at] != "\n":
            at -= 1
        if at < 0 or text[at] in _SENTENCE_END:
            continue
        key = word.casefold()
        if key not in ENGLISH_STOPWORDS:
            found.add(key)
    return found


def entity_mentions(texts: Sequence[str]) -> list[set[str]]:
    """Per text, its entity keys: ``"n:<word>"`` proper nouns, ``"#:<digits>"`` numbers."""
    normalised = [unicodedata.normalize("NFKC", text) for text in texts]
    proper: set[str] = set()
    for text in normalised:
        proper |= _capitalised_mid_sentence(text)
    alias: dict[str, str] = {}
    ordered = sorted(proper)
    for at, name in enumerate(ordered):
        # Sorted order puts the words that extend ``name`` right after it.
        end = at + 1
        while end < len(ordered) and end - at <= 2 and ordered[end].startswith(name):
            end += 1
        if len(name) >= _MIN_ALIAS and end - at == 2:
            alias[name] = ordered[at + 1]
    mentions = []
    for text in normalised:
        keys = set()
        for match in _TOKEN.finditer(text):
            word = match[0]
            key = word.casefold()
            if word[0].isupper() and key in proper:
                keys.add("n:" + alias.get(key, key))
            elif len(word) >= 2 and word.isdigit():
                keys.add("#:" + word.lstrip("0"))
        mentions.append(keys)
    return mentions

"""What MAGMA keeps of one turn (an :class:`Event`): extracted by rules, or read from an LLM reply.

The rule-based extractor is the released code's fallback made complete: it runs
with no model at all, so ``magma`` works offline. It knows English capitalisation
and function words only -- no name, alias or topic of any benchmark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from himga._errors import HimgaError
from himga.memory._magma._dates import ResolvedDate, resolve_dates, resolve_phrase
from himga.memory._text import ENGLISH_MONTHS, ENGLISH_STOPWORDS, words

__all__ = [
    "Event",
    "MalformedReplyError",
    "event_prompt",
    "merge_narrative",
    "narrative_prompt",
    "offline_event",
    "parse_event_reply",
    "parse_json_object",
    "parse_narrative_reply",
]


@dataclass(frozen=True, slots=True)
class Event:
    """The extracted content of a turn; ``source`` says whether an LLM or the rules made it."""

    entities: tuple[str, ...]
    topic: str
    summary: str
    keywords: tuple[str, ...]
    facts: tuple[str, ...]
    dates: tuple[ResolvedDate, ...]
    source: Literal["llm", "offline"]
    narrative: str = ""
    emotion: str | None = None


class MalformedReplyError(HimgaError, ValueError):
    """An LLM reply is not the JSON object the prompt asked for."""


# Capitalised words that open sentences or address people rather than name anything.
_NOT_NAMES = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "wow",
        "oh",
        "ah",
        "yeah",
        "yes",
        "yep",
        "nope",
        "no",
        "okay",
        "ok",
        "thanks",
        "thank",
        "sure",
        "great",
        "good",
        "nice",
        "cool",
        "awesome",
        "amazing",
        "sorry",
        "please",
        "well",
        "so",
        "anyway",
        "also",
        "really",
        "totally",
        "absolutely",
        "definitely",
        "haha",
        "lol",
        "omg",
        "congrats",
        "congratulations",
        "bye",
        "cheers",
        "dear",
        "image",
        "photo",
        "picture",
        "today",
        "tonight",
        "tomorrow",
        "yesterday",
        "morning",
        "evening",
        "afternoon",
        "night",
        "weekend",
        "week",
        "month",
        "year",
    ]
)
_MONTH_AND_DAY_NAMES = frozenset(
    [
        *ENGLISH_MONTHS,
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    ]
)
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’-]*)*")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
MAX_ENTITIES = 8
MAX_KEYWORDS = 12


def _is_name_word(word: str) -> bool:
    folded = word.casefold().removesuffix("'s").removesuffix("’s")
    return bool(folded) and not (
        folded in ENGLISH_STOPWORDS or folded in _NOT_NAMES or folded in _MONTH_AND_DAY_NAMES
    )


def extract_entities(text: str, *, exclude: Sequence[str] = ()) -> tuple[str, ...]:
    """Capitalised word runs of ``text`` that look like names, leading function words dropped."""
    excluded = {name.casefold() for name in exclude}
    found: list[str] = []
    for match in _CAPITALISED_RUN.finditer(text):
        parts = match.group().split()
        while parts and not _is_name_word(parts[0]):
            parts.pop(0)
        while parts and not _is_name_word(parts[-1]):
            parts.pop()
        if not parts:
            continue
        entity = " ".join(parts).rstrip("'’").removesuffix("'s").removesuffix("’s")
        if len(entity) > 1 and entity.casefold() not in excluded:
            found.append(entity)
    return tuple(dict.fromkeys(found))[:MAX_ENTITIES]


def extract_keywords(text: str) -> tuple[str, ...]:
    """The content words of ``text`` (case-folded, no stopwords, 3+ letters), first seen first."""
    kept = (
        w for w in words(text) if len(w) > 2 and w not in ENGLISH_STOPWORDS and w not in _NOT_NAMES
    )
    return tuple(dict.fromkeys(kept))[:MAX_KEYWORDS]


def _summary_sentence(text: str, limit: int = 30) -> str:
    """The first sentence of four words or more (else the first), cut to ``limit`` words."""
    sentences = [m.group().strip() for m in _SENTENCE.finditer(text)] or [text.strip()]
    sentence = next((s for s in sentences if len(s.split()) >= 4), sentences[0])
    tokens = sentence.split()
    return " ".join(tokens[:limit]) + (" ..." if len(tokens) > limit else "")


def offline_event(text: str, speaker: str, anchor: datetime | None) -> Event:
    """The rule-based event of a turn said by ``speaker`` in a session dated ``anchor``."""
    keywords = extract_keywords(text)
    return Event(
        entities=extract_entities(text, exclude=(speaker,)),
        topic=" ".join(keywords[:3]) or "general",
        summary=f"{speaker}: {_summary_sentence(text)}",
        keywords=keywords,
        facts=(),
        dates=resolve_dates(text, anchor),
        source="offline",
    )


# -- the LLM side ------------------------------------------------------------------------

_EVENT_PROMPT = """You are building the memory of a long conversation. Read one turn of it \
and describe it as JSON.

Session date: {date}
Previous turn: {previous}
THE TURN -- {speaker}: {text}
Next turn: {following}

Reply with one JSON object and nothing else, with these keys:
"entities": people, places, organisations and things the turn names (not the speaker unless \
named in the text);
"topic": a few words on what the turn is about;
"summary": one sentence saying who did or said what;
"facts": short standalone statements from the turn that could answer a later question;
"relationships": relations it states between people or things ("X is Y's sister");
"activities": things someone did or plans to do;
"keywords": important words, including ones the neighbouring turns make relevant;
"dates": every time expression the turn uses, copied as said ("last Saturday", "in 2022").
Every value except "topic" and "summary" is a list of strings."""

_NARRATIVE_PROMPT = """Rewrite one turn of a conversation as a memory entry, as JSON.

{speaker} said: {text}

Reply with one JSON object and nothing else: {{"narrative": a third-person sentence or two \
saying what {speaker} said or did, "entities": list of names mentioned, "keywords": list of \
important words, "emotion": the dominant feeling as one word, or null}}."""

RETRY_MESSAGE = (
    "That reply was not the JSON object asked for ({problem}). Reply again with only the JSON "
    "object, no prose and no code fence."
)


def event_prompt(
    speaker: str, text: str, date: str | None, previous: str | None, following: str | None
) -> str:
    """The event-extraction prompt for one turn with its neighbours (first 100 characters)."""
    return _EVENT_PROMPT.format(
        speaker=speaker,
        text=text,
        date=date or "unknown",
        previous=previous[:100] if previous else "(none)",
        following=following[:100] if following else "(none)",
    )


def narrative_prompt(speaker: str, text: str) -> str:
    """The narrative/entity/keyword/emotion prompt for one turn."""
    return _NARRATIVE_PROMPT.format(speaker=speaker, text=text)


def parse_json_object(reply: str) -> dict[str, Any]:
    """The JSON object in ``reply`` (a code fence or prose around it tolerated)."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        raise MalformedReplyError("no JSON object in the reply")
    try:
        value = json.loads(reply[start : end + 1])
    except json.JSONDecodeError as exc:
        raise MalformedReplyError(f"invalid JSON: {exc.msg} at character {exc.pos}") from exc
    if not isinstance(value, dict):
        raise MalformedReplyError("the JSON value is not an object")
    return value


def _strings(obj: Mapping[str, Any], key: str, *, required: bool = True) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None and not required:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MalformedReplyError(f"{key!r} is not a list of strings")
    return tuple(dict.fromkeys(v.strip() for v in value if v.strip()))


def _string(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise MalformedReplyError(f"{key!r} is not a string")
    return value.strip()


def parse_event_reply(reply: str, anchor: datetime | None) -> Event:
    """The :class:`Event` an event-extraction reply describes; dates resolved against ``anchor``."""
    obj = parse_json_object(reply)
    facts = (
        _strings(obj, "facts")
        + _strings(obj, "relationships", required=False)
        + _strings(obj, "activities", required=False)
    )
    return Event(
        entities=_strings(obj, "entities")[:MAX_ENTITIES],
        topic=_string(obj, "topic") or "general",
        summary=_string(obj, "summary"),
        keywords=tuple(k.casefold() for k in _strings(obj, "keywords", required=False)),
        facts=tuple(dict.fromkeys(facts)),
        dates=tuple(resolve_phrase(p, anchor) for p in _strings(obj, "dates", required=False)),
        source="llm",
    )


def parse_narrative_reply(reply: str) -> tuple[str, tuple[str, ...], tuple[str, ...], str | None]:
    """``(narrative, entities, keywords, emotion)`` of a narrative reply."""
    obj = parse_json_object(reply)
    narrative = _string(obj, "narrative")
    if not narrative:
        raise MalformedReplyError("'narrative' is empty")
    emotion = obj.get("emotion")
    if emotion is not None and not isinstance(emotion, str):
        raise MalformedReplyError("'emotion' is neither a string nor null")
    keywords = tuple(k.casefold() for k in _strings(obj, "keywords", required=False))
    return narrative, _strings(obj, "entities", required=False), keywords, emotion


def merge_narrative(
    event: Event,
    narrative: str,
    entities: Sequence[str],
    keywords: Sequence[str],
    emotion: str | None,
) -> Event:
    """``event`` with the second call's narrative, emotion and extra entities and keywords."""
    return Event(
        entities=tuple(dict.fromkeys((*event.entities, *entities)))[:MAX_ENTITIES],
        topic=event.topic,
        summary=event.summary,
        keywords=tuple(dict.fromkeys((*event.keywords, *keywords))),
        facts=event.facts,
        dates=event.dates,
        source=event.source,
        narrative=narrative,
        emotion=emotion,
    )

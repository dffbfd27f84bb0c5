"""The LLM work of a MAGMA build, run concurrently: per-turn extraction, session summaries,
causal links.

Every request goes through ``LLMClient.achat`` under one semaphore, so a build of
``c`` calls costs about ``c / concurrency`` round trips, not ``c``. A reply that
is not the JSON asked for is answered with a correction (up to ``max_attempts``
requests in all); a call that still fails, or raises, degrades that turn to the
rule-based extractor (or drops that summary / those causal links) and is counted
in :class:`BuildStats` -- a build never raises because of the model.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from himga.llm._protocol import ChatMessage, LLMClient
from himga.memory._magma._extract import (
    RETRY_MESSAGE,
    Event,
    MalformedReplyError,
    event_prompt,
    merge_narrative,
    narrative_prompt,
    offline_event,
    parse_event_reply,
    parse_json_object,
    parse_narrative_reply,
)

__all__ = ["BuildStats", "LLMBuilder", "TurnInput", "run_coroutine"]

_log = logging.getLogger("himga.memory.magma")
T = TypeVar("T")

EXTRACTION_MAX_TOKENS = 600
SUMMARY_MAX_TOKENS = 300
CAUSAL_MAX_TOKENS = 300
CAUSAL_NEIGHBOURS = 5
_RELATIONS = ("leads_to", "because_of", "enables", "prevents")

_SUMMARY_PROMPT = """Summarise this conversation session in three to five sentences: who \
took part, what happened to them, what they did, planned or felt, with any dates said. \
Reply with the summary only.

Session date: {date}
{turns}"""

_CAUSAL_PROMPT = """Below is one event from a conversation and events near it in the \
memory graph. Say which nearby events it causally relates to.

Event: {event}
Nearby events:
{neighbours}

Reply with one JSON object and nothing else: {{"relations": [{{"index": the number of a \
nearby event, "relation": one of "leads_to", "because_of", "enables", "prevents" (the \
event ... the nearby one), "confidence": a number from 0 to 1}}]}}. Reply {{"relations": \
[]}} when there is none."""


@dataclass(slots=True)
class BuildStats:
    """What the builds of one memory have cost and how the model behaved, since the last reset.

    ``requests`` counts ``achat`` calls answered (a cache hit included: the client,
    not the memory, knows which were sent), with their tokens; ``failed_requests``
    those that raised after the client's retries; ``malformed_replies`` replies
    that were not the JSON asked for, each followed by a correction request while
    attempts remain; ``degraded_turns`` turns whose extraction fell back to the
    rules. ``build_seconds`` is the wall time of all builds.
    """

    turns: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failed_requests: int = 0
    malformed_replies: int = 0
    degraded_turns: int = 0
    summaries: int = 0
    causal_links: int = 0
    build_seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The counters by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class TurnInput:
    """A turn to extract, with the text around it and its session date."""

    speaker: str
    text: str
    session_date: str | None
    anchor: datetime | None
    previous: str | None
    following: str | None


def run_coroutine(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` to completion from synchronous code.

    In a thread without a running event loop (the evaluation's memory thread)
    that is ``asyncio.run``; inside a running loop, a helper thread runs it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="himga-magma") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


class LLMBuilder:
    """Issues a build's LLM requests through ``llm``, at most ``concurrency`` at once."""

    def __init__(self, llm: LLMClient, concurrency: int, max_attempts: int, stats: BuildStats):
        self.llm = llm
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.stats = stats
        self._lock = threading.Lock()
        self._slots: asyncio.Semaphore | None = None

    async def _ask(self, prompt: str, parse: Callable[[str], T], max_tokens: int) -> T | None:
        """The parsed reply to ``prompt``, or ``None`` when every attempt failed."""
        assert self._slots is not None
        messages: list[ChatMessage] = [{"role": "user", "content": prompt}]
        for attempt in range(self.max_attempts):
            try:
                async with self._slots:
                    completion = await self.llm.achat(messages, max_tokens=max_tokens)
            except Exception as exc:  # the client already retried: degrade, never crash
                _log.warning("MAGMA build request failed: %s: %s", type(exc).__name__, exc)
                with self._lock:
                    self.stats.failed_requests += 1
                return None
            with self._lock:
                self.stats.requests += 1
                self.stats.input_tokens += completion.input_tokens
                self.stats.output_tokens += completion.output_tokens
            try:
                return parse(completion.text)
            except MalformedReplyError as exc:
                with self._lock:
                    self.stats.malformed_replies += 1
                if attempt + 1 < self.max_attempts:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": completion.text or "(empty)"},
                        {"role": "user", "content": RETRY_MESSAGE.format(problem=exc)},
                    ]
        return None

    async def _event(self, turn: TurnInput) -> Event:
        extracted, narrated = await asyncio.gather(
            self._ask(
                event_prompt(
                    turn.speaker, turn.text, turn.session_date, turn.previous, turn.following
                ),
                lambda reply: parse_event_reply(reply, turn.anchor),
                EXTRACTION_MAX_TOKENS,
            ),
            self._ask(
                narrative_prompt(turn.speaker, turn.text),
                parse_narrative_reply,
                EXTRACTION_MAX_TOKENS,
            ),
        )
        if extracted is None:
            with self._lock:
                self.stats.degraded_turns += 1
            extracted = offline_event(turn.text, turn.speaker, turn.anchor)
        if narrated is not None:
            extracted = merge_narrative(extracted, *narrated)
        return extracted

    async def _summary(self, date: str | None, turns: Sequence[str]) -> str | None:
        prompt = _SUMMARY_PROMPT.format(date=date or "unknown", turns="\n".join(turns))

        def parse(reply: str) -> str:
            if not reply.strip():
                raise MalformedReplyError("the summary is empty")
            return reply.strip()

        summary = await self._ask(prompt, parse, SUMMARY_MAX_TOKENS)
        if summary is not None:
            with self._lock:
                self.stats.summaries += 1
        return summary

    async def _causal(
        self, event: str, neighbours: Sequence[tuple[int, str]]
    ) -> list[tuple[int, str, float]]:
        listed = "\n".join(f"{k}. {text}" for k, (_, text) in enumerate(neighbours))

        def parse(reply: str) -> list[tuple[int, str, float]]:
            relations = parse_json_object(reply).get("relations")
            if not isinstance(relations, list):
                raise MalformedReplyError("'relations' is not a list")
            found = []
            for item in relations:
                if not isinstance(item, dict):
                    raise MalformedReplyError("a relation is not an object")
                k, relation = item.get("index"), item.get("relation")
                confidence = item.get("confidence", 0.5)
                if not isinstance(k, int) or not 0 <= k < len(neighbours):
                    raise MalformedReplyError(f"relation index {k!r} names no nearby event")
                if relation not in _RELATIONS or not isinstance(confidence, (int, float)):
                    raise MalformedReplyError(f"relation {relation!r} is not one of {_RELATIONS}")
                found.append((neighbours[k][0], str(relation), float(confidence)))
            return found

        prompt = _CAUSAL_PROMPT.format(event=event, neighbours=listed)
        return await self._ask(prompt, parse, CAUSAL_MAX_TOKENS) or []

    async def _gather(self, coroutines: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
        self._slots = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*coroutines))

    def build(
        self, turns: Sequence[TurnInput], sessions: Sequence[tuple[str | None, Sequence[str]]]
    ) -> tuple[list[Event], list[str | None]]:
        """The event of every turn (2 requests each) and a summary of every ``(date, turn
        lines)`` session (``None`` where the model failed), all requested at once."""

        async def both() -> tuple[list[Event], list[str | None]]:
            self._slots = asyncio.Semaphore(self.concurrency)
            events = asyncio.gather(*(self._event(t) for t in turns))
            summaries = asyncio.gather(*(self._summary(d, lines) for d, lines in sessions))
            done = await asyncio.gather(events, summaries)
            return list(done[0]), list(done[1])

        return run_coroutine(both)

    def causal_links(
        self, requests: Sequence[tuple[str, Sequence[tuple[int, str]]]]
    ) -> list[list[tuple[int, str, float]]]:
        """Per ``(event text, [(node, text)])``: the ``(node, relation, confidence)`` inferred."""
        return run_coroutine(lambda: self._gather([self._causal(e, n) for e, n in requests]))

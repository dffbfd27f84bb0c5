"""A scripted stand-in for the extraction model MAGMA calls, for FakeLLMServer.

It answers each of MAGMA's four prompts in the format asked, from the prompt
alone (deterministic): a turn containing ``MALFORMED`` always gets broken JSON, a
turn containing ``FLAKY`` gets broken JSON until it is asked again with a
correction, and every other reply is well-formed. Other prompts (an eval run's
answers and judge verdicts) get a fixed abstention and "WRONG".
"""

from __future__ import annotations

import json
import re

from himga.llm import ChatMessage

_TURN = re.compile(r"^THE TURN -- ([^:\n]+): (.*)$", re.MULTILINE)
_SAID = re.compile(r"^(.+?) said: (.*)$", re.MULTILINE)


def _names(text: str) -> list[str]:
    return [w for w in re.findall(r"\b[A-Z][a-z]+\b", text) if w not in {"The", "I", "What"}]


def magma_responder(messages: list[ChatMessage]) -> str:
    """The reply a cooperative (but sometimes sloppy) extraction model would give."""
    prompt = messages[0]["content"] if messages[0]["role"] == "user" else messages[1]["content"]
    corrected = len(messages) > 1 and messages[-1]["content"].startswith("That reply was not")
    turn = _TURN.search(prompt) or _SAID.search(prompt)
    if turn is not None:
        speaker, text = turn.group(1), turn.group(2)
        if "MALFORMED" in text or ("FLAKY" in text and not corrected):
            return '{"entities": ["unterminated'
        words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", text)]
        if prompt.startswith("Rewrite"):
            return json.dumps(
                {
                    "narrative": f"{speaker} talked about {' '.join(words[:4]) or 'nothing'}.",
                    "entities": _names(text),
                    "keywords": words[:3],
                    "emotion": None,
                }
            )
        return (
            "```json\n"
            + json.dumps(
                {
                    "entities": _names(text),
                    "topic": " ".join(words[:2]) or "chat",
                    "summary": f"{speaker} said: {text[:60]}",
                    "facts": [f"{speaker}: {text[:80]}"],
                    "relationships": [],
                    "activities": words[:1],
                    "keywords": words[:5],
                    "dates": [d for d in ("yesterday", "last week") if d in text.lower()],
                }
            )
            + "\n```"
        )
    if prompt.startswith("Summarise"):
        return "The speakers caught up on their news."
    if "Nearby events:" in prompt:
        return json.dumps({"relations": [{"index": 0, "relation": "leads_to", "confidence": 0.8}]})
    # not MAGMA's: the agent's answer and the judge's verdict of an eval run
    if "Generated answer:" in messages[-1]["content"]:
        return '{"label": "WRONG"}'
    if "Answer yes or no only." in messages[-1]["content"]:
        return "no"
    return "Not mentioned in the conversation."

"""What the cost tests share: a fake-LLM responder for mem0 ``infer=true`` runs, and the
server-side count of what it received per phase."""

from __future__ import annotations

import json
from typing import Any

from himga.eval.judge import offline_judge_responder
from himga.llm import ChatMessage, ChatRequest, RecordedRequest


def phase_of(messages: list[ChatMessage]) -> str:
    """The phase a request belongs to, read from what it asks."""
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:
        return "judging"
    if prompt.endswith("Short answer:"):
        return "answering"
    return "ingest"  # mem0's fact extraction: the only other caller


def respond(request: ChatRequest) -> str:
    """mem0's fact extraction answered with one fact per message; the rest offline."""
    if phase_of(request) == "ingest":
        assert request.response_format == "json_object"
        newest = request[-1]["content"].split()[-6:]
        return json.dumps({"memory": [{"text": "Fact: " + " ".join(newest)}]})
    return offline_judge_responder(request)


def received(requests: list[RecordedRequest]) -> dict[str, int]:
    """The requests the server received, counted per phase."""
    counted: dict[str, int] = {}
    for request in requests:
        phase = phase_of(request.messages)
        counted[phase] = counted.get(phase, 0) + 1
    return counted


def calls_per_phase(costs: dict[str, Any]) -> dict[str, int]:
    """The calls per phase of a manifest's ``costs``, phases without calls left out."""
    return {phase["phase"]: phase["calls"] for phase in costs["phases"] if phase["calls"]}

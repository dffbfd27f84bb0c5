"""What the integration tests share: three turns of one LoCoMo-style session, and a
two-conversation LoCoMo file's content for end-to-end runs."""

from __future__ import annotations

from typing import Any

from himga.data.schema import Message, Session

SESSION = Session("session_1", [], "1:56 pm on 8 May, 2023")
TURNS = [
    Message("Caroline", "I went hiking in the Alps with my sister.", "D1:1"),
    Message("Melanie", "My cat Luna knocked over the painting.", "D1:2"),
    Message("Caroline", "Next month I start a pottery class.", "D1:3"),
]


def _conversation(sample_id: str, facts: list[str]) -> dict[str, Any]:
    """A LoCoMo sample: one session of three turns (`facts`), a question on the first two."""
    turns = [
        {"speaker": speaker, "dia_id": f"D1:{n}", "text": text}
        for n, (speaker, text) in enumerate(zip(["Ann", "Bob", "Ann"], facts, strict=True), start=1)
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        # Distinct questions and answers: the judge asks about each one once.
        "qa": [
            {"question": f"{question} ({sample_id})?", "answer": fact.split()[-1].strip(".")}
            | {"evidence": [f"D1:{n}"], "category": 4}
            for n, (question, fact) in enumerate(
                zip(["Where did Ann hike", "What is Bob's cat"], facts[:2], strict=True), start=1
            )
        ],
    }


LOCOMO = [
    _conversation("conv-a", ["I hiked in the Alps.", "My cat is Luna.", "I paint on Sundays."]),
    _conversation("conv-b", ["I hiked in Peru.", "Our cat is Momo.", "I bake bread."]),
]

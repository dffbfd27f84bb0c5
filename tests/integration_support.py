"""What the integration tests share: three turns of one LoCoMo-style session."""

from __future__ import annotations

from himga.data.schema import Message, Session

SESSION = Session("session_1", [], "1:56 pm on 8 May, 2023")
TURNS = [
    Message("Caroline", "I went hiking in the Alps with my sister.", "D1:1"),
    Message("Melanie", "My cat Luna knocked over the painting.", "D1:2"),
    Message("Caroline", "Next month I start a pottery class.", "D1:3"),
]

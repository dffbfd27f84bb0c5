"""LongMemEval's question types, which are its categories (the six of the paper)."""

from __future__ import annotations

__all__ = [
    "CATEGORIES",
    "KNOWLEDGE_UPDATE",
    "MULTI_SESSION",
    "SINGLE_SESSION_ASSISTANT",
    "SINGLE_SESSION_PREFERENCE",
    "SINGLE_SESSION_USER",
    "TEMPORAL_REASONING",
    "UNKNOWN",
]

SINGLE_SESSION_USER = "single-session-user"
SINGLE_SESSION_ASSISTANT = "single-session-assistant"
SINGLE_SESSION_PREFERENCE = "single-session-preference"
MULTI_SESSION = "multi-session"
KNOWLEDGE_UPDATE = "knowledge-update"
TEMPORAL_REASONING = "temporal-reasoning"
UNKNOWN = "unknown"
"""The category of a ``question_type`` himga does not know (it warns)."""

CATEGORIES: tuple[str, ...] = (
    SINGLE_SESSION_USER,
    SINGLE_SESSION_ASSISTANT,
    SINGLE_SESSION_PREFERENCE,
    MULTI_SESSION,
    KNOWLEDGE_UPDATE,
    TEMPORAL_REASONING,
    UNKNOWN,
)
"""Report order."""

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

CATEGORIES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
    "unknown",  # the category of a question_type himga does not know (it warns)
)
"""Report order."""

(
    SINGLE_SESSION_USER,
    SINGLE_SESSION_ASSISTANT,
    SINGLE_SESSION_PREFERENCE,
    MULTI_SESSION,
    KNOWLEDGE_UPDATE,
    TEMPORAL_REASONING,
    UNKNOWN,
) = CATEGORIES

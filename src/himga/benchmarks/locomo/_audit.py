"""dial481/locomo-audit's ``errors.json``: the published audit of LoCoMo-10's gold.

156 entries, one per question found faulty: ``question_id`` (``locomo_<conversation
index>_qa<0-based question index>``), ``question``, ``golden_answer``, ``category``,
``error_type``, ``cited_evidence``, ``correct_evidence``, ``reasoning`` and
``correct_answer``. ``error_type`` ``WRONG_CITATION`` (57 entries) marks a right answer
cited from the wrong turns; the other 99 (``HALLUCINATION``, ``TEMPORAL_ERROR``,
``ATTRIBUTION_ERROR``, ``AMBIGUOUS``) a wrong gold answer -- the audit's "99 of 1,540
questions", its ceiling 93.57%. Licensed CC BY-NC 4.0, as LoCoMo. Fetched only at the
user's request (``himga errata fetch locomo-audit``), pinned by hash; nothing of it is
in this package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["AUDIT_LICENSE", "AUDIT_SHA256", "AUDIT_URL", "audit_entries", "is_audit"]

_COMMIT: Final = "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"
AUDIT_URL: Final = f"https://raw.githubusercontent.com/dial481/locomo-audit/{_COMMIT}/errors.json"
AUDIT_SHA256: Final = "f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e"
AUDIT_LICENSE: Final = "CC BY-NC 4.0"

#: The sample ids of locomo10.json in file order: the audit names a conversation by index.
_CONVERSATIONS: Final = (
    "conv-26",
    "conv-30",
    "conv-41",
    "conv-42",
    "conv-43",
    "conv-44",
    "conv-47",
    "conv-48",
    "conv-49",
    "conv-50",
)
#: A right gold answer cited from the wrong turns: not a gold error for accuracy.
_CITATION_ONLY: Final = "WRONG_CITATION"
_ID = re.compile(r"locomo_(\d+)_qa(\d+)")


def is_audit(data: object) -> bool:
    """Whether ``data`` (parsed JSON) has the audit's shape: a list of objects with
    ``question_id`` and ``error_type``."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(e, dict) and "question_id" in e and "error_type" in e for e in data)
    )


def audit_entries(data: Sequence[Any], where: str) -> list[tuple[str, str | None, str | None]]:
    """``(question id, corrected answer, reason)`` of every gold-answer error of the audit
    ``data`` read from ``where``, the id as himga's LoCoMo loader names it
    (``conv-26:q2``); citation-only entries are left out (module docstring).

    Raises ``ValueError`` naming ``where`` and the entry for an id of another shape or
    a conversation LoCoMo-10 does not have.
    """
    found: list[tuple[str, str | None, str | None]] = []
    for index, entry in enumerate(data):
        if entry["error_type"] == _CITATION_ONLY:
            continue
        match = _ID.fullmatch(str(entry["question_id"]))
        if match is None or int(match[1]) >= len(_CONVERSATIONS):
            raise ValueError(
                f"{where}: entry {index}: question_id {entry['question_id']!r} is not "
                f"locomo_<0-{len(_CONVERSATIONS) - 1}>_qa<index>"
            )
        question_id = f"{_CONVERSATIONS[int(match[1])]}:q{int(match[2]) + 1}"
        reason = f"{entry['error_type']}: {entry.get('reasoning', '')}".strip()
        corrected = entry.get("correct_answer")
        found.append((question_id, None if corrected is None else str(corrected), reason))
    return found

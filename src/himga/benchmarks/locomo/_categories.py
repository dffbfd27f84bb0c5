"""LoCoMo's question categories and the official integer codes behind them.

The codes follow the official scorer, ``task_eval/evaluation.py`` of
snap-research/locomo: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial. Some popular harnesses use a contradicting map (e.g. 1 =
single-hop); numbers computed with it are not comparable with the paper's.
"""

from __future__ import annotations

__all__ = [
    "ADVERSARIAL",
    "CATEGORIES",
    "MULTI_HOP",
    "OPEN_DOMAIN",
    "SINGLE_HOP",
    "TEMPORAL",
    "category_of_code",
    "code_of",
]

MULTI_HOP = "multi-hop"
TEMPORAL = "temporal"
OPEN_DOMAIN = "open-domain"
SINGLE_HOP = "single-hop"
ADVERSARIAL = "adversarial"

CATEGORIES: tuple[str, ...] = (MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP, ADVERSARIAL)
"""In the order of their codes 1-5, which is the report order."""


def category_of_code(code: int) -> str:
    """The category of an official integer code; ``ValueError`` if unknown."""
    if isinstance(code, bool) or not isinstance(code, int) or not 1 <= code <= len(CATEGORIES):
        raise ValueError(f"unknown LoCoMo category code {code!r} (known: 1-5)")
    return CATEGORIES[code - 1]


def code_of(category: str) -> int | None:
    """The official integer code of a LoCoMo category, ``None`` for any other string."""
    return CATEGORIES.index(category) + 1 if category in CATEGORIES else None

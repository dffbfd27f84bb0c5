"""``Category``: the question categories of LoCoMo and LongMemEval as one str-enum.

Kept for code written before categories became plain strings owned by each
benchmark (``himga.data.Category`` re-exports it). Its members equal those strings
(``Category.ADVERSARIAL == "adversarial"``), but they are not the objects the
loaders produce: compare with ``==``, not ``is``. Its values are spelled out here
rather than imported from :mod:`himga.benchmarks.locomo` and
:mod:`himga.benchmarks.longmemeval`, which sit above :mod:`himga.data`.
"""

from __future__ import annotations

import enum

__all__ = ["Category"]


class Category(str, enum.Enum):
    """Question categories of both built-in benchmarks (a compatibility alias).

    LoCoMo's integer codes follow the official scorer, ``task_eval/evaluation.py``
    of snap-research/locomo: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    5 adversarial. Some popular harnesses use a contradicting map (e.g. 1 = single-hop);
    numbers computed with it are not comparable with the paper's.
    """

    MULTI_HOP = "multi-hop"
    TEMPORAL = "temporal"
    OPEN_DOMAIN = "open-domain"
    SINGLE_HOP = "single-hop"
    ADVERSARIAL = "adversarial"
    SINGLE_SESSION_USER = "single-session-user"
    SINGLE_SESSION_ASSISTANT = "single-session-assistant"
    SINGLE_SESSION_PREFERENCE = "single-session-preference"
    MULTI_SESSION = "multi-session"
    KNOWLEDGE_UPDATE = "knowledge-update"
    TEMPORAL_REASONING = "temporal-reasoning"
    UNKNOWN = "unknown"

    @classmethod
    def from_locomo_code(cls, code: int) -> Category:
        """The category of an official LoCoMo integer code; ``ValueError`` if unknown."""
        try:
            return _LOCOMO_CODES[code]
        except KeyError:
            raise ValueError(f"unknown LoCoMo category code {code!r} (known: 1-5)") from None

    @property
    def locomo_code(self) -> int | None:
        """The official LoCoMo integer code, ``None`` for LongMemEval categories."""
        return _LOCOMO_NUMBERS.get(self)


_LOCOMO_CODES: dict[int, Category] = {
    1: Category.MULTI_HOP,
    2: Category.TEMPORAL,
    3: Category.OPEN_DOMAIN,
    4: Category.SINGLE_HOP,
    5: Category.ADVERSARIAL,
}
_LOCOMO_NUMBERS = {category: code for code, category in _LOCOMO_CODES.items()}

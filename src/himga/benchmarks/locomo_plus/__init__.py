"""LoCoMo-Plus (Li et al., 2026): cue / trigger items stitched into LoCoMo-10.

Each of the 401 items of ``locomo_plus.json`` (xjtuleeyf/Locomo-Plus) is a short
cue dialogue and a later trigger remark that shares no words with it; the
benchmark asks whether a memory connects the two. Registered as ``locomo-plus``
(the 401 items) and ``locomo-plus-unified`` (LoCoMo-10's own questions too, as
upstream's unified evaluation). How the items are stitched: :func:`stitch` and
``docs/locomo_plus.md``.
"""

from himga.benchmarks.locomo_plus._benchmark import FILE, LocomoPlus, benchmarks
from himga.benchmarks.locomo_plus._gap import (
    DAYS_PER_UNIT,
    VAGUE_COUNTS,
    TimeGapError,
    parse_time_gap,
)
from himga.benchmarks.locomo_plus._items import RELATION_TYPES, PlusItem, Turn, read_items
from himga.benchmarks.locomo_plus._judge import LABEL_SCORES, PROMPTS, LocomoPlusJudge
from himga.benchmarks.locomo_plus._metrics import METRICS
from himga.benchmarks.locomo_plus._stitch import (
    COGNITIVE,
    CUE_SESSION,
    QUERY_DELAY,
    cue_text,
    stitch,
)

__all__ = [
    "COGNITIVE",
    "CUE_SESSION",
    "DAYS_PER_UNIT",
    "FILE",
    "LABEL_SCORES",
    "METRICS",
    "PROMPTS",
    "QUERY_DELAY",
    "RELATION_TYPES",
    "VAGUE_COUNTS",
    "LocomoPlus",
    "LocomoPlusJudge",
    "PlusItem",
    "TimeGapError",
    "Turn",
    "benchmarks",
    "cue_text",
    "parse_time_gap",
    "read_items",
    "stitch",
]

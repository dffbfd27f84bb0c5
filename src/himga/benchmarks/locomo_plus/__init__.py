"""LoCoMo-Plus: cue / trigger items stitched into LoCoMo-10 conversations (placeholder)."""

from himga.benchmarks.locomo_plus._gap import TimeGapError, parse_time_gap
from himga.benchmarks.locomo_plus._items import read_items

__all__ = ["TimeGapError", "parse_time_gap", "read_items"]

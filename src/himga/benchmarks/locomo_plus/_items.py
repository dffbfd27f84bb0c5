"""The LoCoMo-Plus file, ``locomo_plus.json``: a list of cue / trigger items.

Each item is ``{"relation_type", "cue_dialogue", "trigger_query", "time_gap", ...}``;
dialogues are lines ``A: <text>`` / ``B: <text>``. Upstream keeps only such lines
(``parse_ab_dialogue`` of ``data/build_conv.py``) and silently drops others; here
any other non-blank line is an error, so nothing is dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from himga.benchmarks.locomo_plus._gap import TimeGapError, parse_time_gap
from himga.data._errors import DatasetError, UnknownCategoryWarning
from himga.data._fields import checked, kind_of, read_json

__all__ = ["RELATION_TYPES", "PlusItem", "Turn", "item_id", "read_items"]

#: The relation types of the published file, in report order.
RELATION_TYPES = ("causal", "state", "goal", "value")
#: The category of an item whose relation type is missing or not one of those.
UNKNOWN = "unknown"

_FIELDS = ("relation_type", "cue_dialogue", "trigger_query", "time_gap")


@dataclass(frozen=True, slots=True)
class Turn:
    """One line of an item's dialogue: ``speaker`` is ``"A"`` or ``"B"``."""

    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class PlusItem:
    """One LoCoMo-Plus item, validated.

    ``index`` is its position in the file (0-based); ``gap_days`` is ``time_gap``
    read by :func:`~himga.benchmarks.locomo_plus.parse_time_gap`; ``extras`` keeps
    the item's other fields (``model_name``, similarity ``scores`` and ``ranks``).
    """

    index: int
    relation_type: str
    cue: Sequence[Turn]
    trigger: Sequence[Turn]
    time_gap: str
    gap_days: int
    extras: Mapping[str, Any]


def item_id(index: int) -> str:
    """The sample id of the item at ``index`` of the file: ``"plus-<index>"``, zero-padded."""
    return f"plus-{index:03d}"


def read_items(path: Path) -> list[PlusItem]:
    """Every item of a ``locomo_plus.json`` file, in file order.

    Raises :class:`~himga.data.DatasetError` naming the file, the item (its
    sample id and position) and the field for malformed input: not JSON, not a
    list of objects, a missing or non-string field (``relation_type``: only one that
    is not a string; a missing or unknown one is kept as :data:`UNKNOWN`, warned), a
    dialogue line that is not ``A: ...`` / ``B: ...``, an empty dialogue, an
    unreadable ``time_gap``.
    """
    data = read_json(path, path.read_bytes())
    if not isinstance(data, list):
        raise DatasetError(path, f"expected a list of items, found {kind_of(data)}")
    return [_item(path, index, raw) for index, raw in enumerate(data)]


def _item(path: Path, index: int, raw: Any) -> PlusItem:
    sample = f"{item_id(index)} (item #{index})"

    def error(field: str, problem: str) -> DatasetError:
        return DatasetError(path, problem, sample=sample, field=field)

    if not isinstance(raw, dict):
        raise DatasetError(path, f"is {kind_of(raw)}, not an object", sample=sample)
    relation = _relation(path, sample, raw.get("relation_type"))
    cue, trigger, time_gap = (checked(error, raw, f, str, f) for f in _FIELDS[1:])
    try:
        gap_days = parse_time_gap(time_gap)
    except TimeGapError as exc:
        raise error("time_gap", str(exc)) from None
    return PlusItem(
        index=index,
        relation_type=relation,
        cue=_dialogue(error, "cue_dialogue", cue),
        trigger=_dialogue(error, "trigger_query", trigger),
        time_gap=time_gap,
        gap_days=gap_days,
        extras=MappingProxyType({k: v for k, v in raw.items() if k not in _FIELDS}),
    )


def _relation(path: Path, sample: str, raw: Any) -> str:
    """The item's category: its ``relation_type``, or :data:`UNKNOWN` (warned) when it has
    none or one outside :data:`RELATION_TYPES`: upstream's scripts never read it."""
    if raw in RELATION_TYPES:
        return str(raw)
    if raw is not None and not isinstance(raw, str):
        raise DatasetError(
            path, f"expected str, found {kind_of(raw)}", sample=sample, field="relation_type"
        )
    problem = "missing" if raw is None else f"unknown relation type {raw!r}"
    warnings.warn(
        UnknownCategoryWarning(
            f"{path}: sample {sample}: field 'relation_type': {problem}; "
            f"kept as category {UNKNOWN!r}"
        ),
        stacklevel=2,
    )
    return UNKNOWN


def _dialogue(error: Callable[[str, str], DatasetError], field: str, text: str) -> tuple[Turn, ...]:
    turns = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        speaker, colon, said = stripped.partition(":")
        if not colon or speaker not in ("A", "B"):
            raise error(field, f"line {number} is not 'A: ...' or 'B: ...': {line!r}")
        if not said.strip():
            raise error(field, f"line {number} has a speaker but no text: {line!r}")
        turns.append(Turn(speaker, said.strip()))
    if not turns:
        raise error(field, "no 'A: ...' or 'B: ...' line")
    return tuple(turns)

"""Normalisation of LoCoMo evidence ids.

The released file holds a few malformed entries: several ids in one string
(``"D8:6; D9:17"``, ``"D9:1 D4:4 D4:6"``), a stray colon (``"D:11:26"``) and
zero-padded numbers (``"D30:05"``). Turn ids (``dia_id``) are ``D<session>:<turn>``
without padding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["normalise_evidence"]

_SEPARATORS = re.compile(r"[;,\s]+")
_REPAIRABLE = re.compile(r"D:?0*(\d+):0*(\d+)")


def normalise_evidence(raw: Iterable[str]) -> list[str]:
    """Split every entry on ``;``, ``,`` and whitespace, repair each id, drop repeats.

    ``D:11:26`` becomes ``D11:26`` and ``D30:05`` becomes ``D30:5``. Ids that do
    not look like ``D<n>:<m>`` are returned unchanged (the caller warns about
    ids that name no turn). Order of first appearance is kept.
    """
    ids: list[str] = []
    for entry in raw:
        for token in _SEPARATORS.split(entry):
            if not token:
                continue
            match = _REPAIRABLE.fullmatch(token)
            repaired = f"D{int(match[1])}:{int(match[2])}" if match else token
            if repaired not in ids:
                ids.append(repaired)
    return ids

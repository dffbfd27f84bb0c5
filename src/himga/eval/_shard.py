"""Shards: a deterministic 1/N of the samples, chosen by sample id alone."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from himga._errors import HimgaError
from himga.data.schema import Sample

__all__ = ["Shard", "ShardSpecError", "coverage"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardSpecError(HimgaError, ValueError):
    """A shard is not ``I/N`` with ``1 <= I <= N``."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``; ``index`` counts from 0 (``range(count)``, as the run
    manifest stores it), the text form ``I/N`` from 1, as Playwright's, Jest's and
    Vitest's ``--shard 1/2`` is the first half: ``Shard.parse("1/2") == Shard(0, 2)``.

    A sample belongs to the shard ``int(sha256(sample_id)[:8 bytes]) % count``:
    stable for a given id whatever the order, the other samples or the other
    shards, so N independent jobs cover every sample exactly once.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ShardSpecError(
                f"shard {self.index}/{self.count}: need a count >= 1 and 0 <= index < count"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` with ``1 <= I <= N`` (``"1/4"`` is the first of four) as a
        :class:`Shard`; :class:`ShardSpecError` otherwise."""
        match = _SHARD.match(text)
        if match is None:
            raise ShardSpecError(f"shard {text!r}: expected I/N, e.g. 1/4 (I counts from 1)")
        number, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 1 <= number <= count:
            raise ShardSpecError(
                f"shard {text!r}: expected I/N with 1 <= I <= N (I counts from 1: "
                f"1/{max(count, 1)} is the first shard)"
            )
        return cls(number - 1, count)

    def __str__(self) -> str:
        """``I/N`` as :meth:`parse` reads it (``I`` is ``index + 1``)."""
        return f"{self.index + 1}/{self.count}"

    @staticmethod
    def of(sample_id: str, count: int) -> int:
        """The index of the shard of ``count`` that ``sample_id`` belongs to."""
        digest = hashlib.sha256(sample_id.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % count

    def contains(self, sample_id: str) -> bool:
        """Whether sample ``sample_id`` belongs to this shard."""
        return self.of(sample_id, self.count) == self.index

    def select(self, samples: Iterable[Sample]) -> list[Sample]:
        """The samples of this shard, in their given order."""
        return [sample for sample in samples if self.contains(sample.sample_id)]


def coverage(samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """What a run over ``samples`` covers: each sample id with its question ids, in order
    (written by every shard, so a merge can tell a missing question without the dataset)."""
    return [
        {"sample_id": s.sample_id, "question_ids": [qa.question_id for qa in s.qa_pairs]}
        for s in samples
    ]

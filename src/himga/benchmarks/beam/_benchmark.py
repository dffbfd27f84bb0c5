"""The BEAM tiers as :class:`~himga.benchmarks.Benchmark` registrations."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from himga.benchmarks._protocol import Judge
from himga.benchmarks.beam._download import BASE_URL, URL_ENV, download_tier
from himga.benchmarks.beam._judge import BeamJudge
from himga.benchmarks.beam._load import (
    CHAT_FILE,
    QUESTION_TYPES,
    QUESTIONS_FILE,
    TRUNCATED_CHAT_FILE,
    conversation_dirs,
    iter_beam,
)
from himga.benchmarks.beam._manifest import COMMIT, FILES, REPOSITORY, TIERS
from himga.data._errors import DatasetError
from himga.data.schema import Sample

__all__ = ["BeamBenchmark", "tiers"]

_SIZES = {
    "100K": "20 conversations of ~128K tokens",
    "500K": "35 conversations of ~500K tokens",
    "1M": "35 conversations of ~1M tokens",
    "10M": "10 conversations of ~10M tokens",
}


class BeamBenchmark:
    """One BEAM tier (``"100K"``, ``"500K"``, ``"1M"`` or ``"10M"``), named ``beam-<tier>``.

    Options (register a variant under another ``name`` to use them from the CLI):
    ``truncated=False`` reads every conversation's ``chat.json`` even where the
    repository has ``chat_trunecated.json`` (which the official answer script
    reads); ``keep_markers=True`` keeps the ``->-> batch,turn`` markers in the
    messages; ``official_scoring=True`` scores answers as the official script
    does, bugs included (see :class:`BeamJudge`).
    """

    license = "none stated (the BEAM repository has no licence file)"
    categories: Sequence[str] = QUESTION_TYPES
    headline_excludes: frozenset[str] = frozenset()
    metrics = ()

    def __init__(
        self,
        tier: str,
        *,
        name: str | None = None,
        truncated: bool = True,
        keep_markers: bool = False,
        official_scoring: bool = False,
    ) -> None:
        if tier not in TIERS:
            raise ValueError(f"unknown BEAM tier {tier!r}; known: {', '.join(TIERS)}")
        self.tier = tier
        self.name = name or f"beam-{tier.lower()}"
        self.description = f"BEAM {tier} tier: {_SIZES[tier]}, 20 probing questions each (10 types)"
        self.truncated = truncated
        self.keep_markers = keep_markers
        self.judge: Judge | None = BeamJudge(official=official_scoring)

    def __repr__(self) -> str:
        return f"BeamBenchmark({self.tier!r}, name={self.name!r})"

    def locate(self, directory: Path) -> Path | None:
        """The tier folder in ``directory``, in a sub-directory ``<name>``, ``beam`` or ``BEAM``.

        In each, a checkout of the repository (``chats/<tier>/``), a folder holding
        tier folders (``<tier>/``), or the tier folder itself are accepted. A tier
        folder holds number-named conversation folders with a chat file; one named
        after another tier is not this tier's.
        """
        for base in (directory, directory / self.name, directory / "beam", directory / "BEAM"):
            for candidate in (base / "chats" / self.tier, base / self.tier, base):
                if self._is_tier(candidate):
                    return candidate
        return None

    def _is_tier(self, folder: Path) -> bool:
        if not folder.is_dir() or folder.name in set(TIERS) - {self.tier}:
            return False
        return any(
            (c / CHAT_FILE).is_file() or (c / TRUNCATED_CHAT_FILE).is_file()
            for c in conversation_dirs(folder)
        )

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """The tier's files of the repository at the pinned commit into ``cache/chats/<tier>``."""
        url = os.environ.get(URL_ENV) or BASE_URL
        return download_tier(
            FILES[self.tier],
            f"{url}/chats/{self.tier}",
            cache / "chats" / self.tier,
            show_progress=show_progress,
        )

    def guidance(self, cache: Path) -> str:
        """Where the tier comes from and where to put it."""
        return (
            f"clone https://github.com/{REPOSITORY} (commit {COMMIT[:7]}) and pass the "
            f"checkout, or its chats/{self.tier} folder, as the data path; or copy that "
            f"folder to {cache / 'chats' / self.tier}"
        )

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        """The tier's conversations under ``path`` (a tier folder), one sample each."""
        if not path.is_dir():
            raise DatasetError(
                path, "a BEAM copy is a folder: a repository checkout or a tier folder"
            )
        if not conversation_dirs(path):
            raise DatasetError(
                path, f"holds no conversation folder (<n>/ with {QUESTIONS_FILE.as_posix()})"
            )
        return iter_beam(
            path, self.name, wanted, truncated=self.truncated, keep_markers=self.keep_markers
        )


def tiers() -> list[BeamBenchmark]:
    """Every BEAM tier with the default options: ``beam-100k`` ... ``beam-10m``."""
    return [BeamBenchmark(tier) for tier in TIERS]

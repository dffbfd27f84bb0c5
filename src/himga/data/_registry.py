"""The datasets himga knows: where their official copies live and how to check them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from himga.data._errors import UnknownDatasetError

__all__ = ["DATASETS", "DatasetSpec", "get_spec"]

_LOCOMO_COMMIT = "e76cdff4a04fce19090596d49862fe87a5c15aaa"
_LONGMEMEVAL = "https://huggingface.co/datasets/xiaowu0162/longmemeval/resolve/main"
_LONGMEMEVAL_CLEANED = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main"


@dataclass(frozen=True)
class DatasetSpec:
    """A known dataset.

    ``files`` are the file names a local copy may have, in order of preference
    (the first one found in a directory is loaded). ``url`` is the official
    download, saved as ``download_name``; ``sha256`` pins its content, ``None``
    when it could not be verified when himga was written (then only the
    file's shape is checked, and a warning says so). ``family`` is
    ``"locomo"`` or ``"longmemeval"`` (the loader used).
    """

    name: str
    family: str
    description: str
    files: tuple[str, ...]
    url: str
    download_name: str
    sha256: str | None
    license: str

    @property
    def url_env(self) -> str:
        """The environment variable that overrides ``url`` (a mirror, or a test server)."""
        return f"HIMGA_{self.name.upper()}_URL"


def _longmemeval(
    variant: str, description: str, base: str, remote: str, sha256: str | None = None
) -> DatasetSpec:
    name = f"longmemeval_{variant}"
    return DatasetSpec(
        name=name,
        family="longmemeval",
        description=description,
        files=(f"{name}.json", name),
        url=f"{base}/{remote}",
        download_name=f"{name}.json",
        sha256=sha256,
        license="MIT",
    )


DATASETS: Mapping[str, DatasetSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            DatasetSpec(
                name="locomo",
                family="locomo",
                description="LoCoMo-10: 10 long two-person conversations, 1,986 questions",
                files=("locomo10.json", "locomo10.zip"),
                url=(
                    "https://raw.githubusercontent.com/snap-research/locomo/"
                    f"{_LOCOMO_COMMIT}/data/locomo10.zip"
                ),
                download_name="locomo10.zip",
                sha256="5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5",
                license="CC BY-NC 4.0",
            ),
            _longmemeval(
                "s",
                "LongMemEval_S: 500 questions, ~50 haystack sessions each (~115k tokens)",
                _LONGMEMEVAL,
                "longmemeval_s",
            ),
            _longmemeval(
                "m",
                "LongMemEval_M: 500 questions, ~500 haystack sessions each (2.7 GB)",
                _LONGMEMEVAL,
                "longmemeval_m",
            ),
            # Pinned to the file of ../shared/datasets, byte-identical to the cleaned
            # release's longmemeval_oracle.json (15,388,478 bytes); the other
            # LongMemEval files could not be fetched here to be hashed.
            _longmemeval(
                "oracle",
                "LongMemEval oracle: 500 questions with only their evidence sessions",
                _LONGMEMEVAL_CLEANED,
                "longmemeval_oracle.json",
                "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c",
            ),
            _longmemeval(
                "s_cleaned",
                "LongMemEval_S, cleaned release (2025)",
                _LONGMEMEVAL_CLEANED,
                "longmemeval_s_cleaned.json",
            ),
            _longmemeval(
                "m_cleaned",
                "LongMemEval_M, cleaned release (2025)",
                _LONGMEMEVAL_CLEANED,
                "longmemeval_m_cleaned.json",
            ),
        )
    }
)


def get_spec(name: str) -> DatasetSpec:
    """The spec of dataset ``name``; :class:`UnknownDatasetError` listing the known ones."""
    try:
        return DATASETS[name]
    except KeyError:
        known = ", ".join(DATASETS)
        raise UnknownDatasetError(f"unknown dataset {name!r}; known: {known}") from None

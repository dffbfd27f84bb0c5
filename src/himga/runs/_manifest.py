"""The run manifest: what was run, on what, when and with what outcome, as typed data.

``manifest.json`` of a run directory is :meth:`Manifest.to_dict`. Format 1 adds
``format`` and ``results_sha256`` to what himga 0.1.0 wrote (format 0, no
``format`` key), which still reads: its files are the same otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from himga._errors import HimgaError

__all__ = ["MANIFEST_FORMAT", "DatasetInfo", "Manifest", "ManifestError", "MemoryInfo", "ShardInfo"]

#: The manifest format this himga writes; it reads this one and every older one.
MANIFEST_FORMAT = 1


class ManifestError(HimgaError, ValueError):
    """A manifest is not one himga can read (the message names the field)."""


def _get(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if name not in data:
        raise ManifestError(f"{where}: no field {name!r}")
    value = data[name]
    if not isinstance(value, kind):
        raise ManifestError(f"{where}.{name}: expected {_kind(kind)}, got {value!r}")
    return value


def _kind(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)


_OBJECT = (dict, type(None))
_INT = (int, type(None))
_STR = (str, type(None))


@dataclass(frozen=True)
class DatasetInfo:
    """The data of a run: ``name``, file ``path`` and its ``sha256``, the ``--limit``, and how
    many ``samples`` and ``questions`` the run covered."""

    name: str
    path: str
    sha256: str
    limit: int | None
    samples: int
    questions: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in manifest order."""
        return {
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
            "limit": self.limit,
            "samples": self.samples,
            "questions": self.questions,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetInfo:
        """The inverse of :meth:`to_dict`; :class:`ManifestError` naming a bad field."""
        w = "dataset"
        return cls(
            name=_get(data, "name", str, w),
            path=_get(data, "path", str, w),
            sha256=_get(data, "sha256", str, w),
            limit=_get(data, "limit", _INT, w),
            samples=_get(data, "samples", int, w),
            questions=_get(data, "questions", int, w),
        )


@dataclass(frozen=True)
class MemoryInfo:
    """The memory of a run: its ``spec`` and resolved ``target``, constructor ``arguments``,
    ``class_name`` (``module:qualname``) and ``repr``, the ``distribution`` and ``version``
    that provide it, its source hash and file count, and the per-call ``timeout_s``."""

    spec: str
    target: str
    arguments: Mapping[str, Any]
    class_name: str
    repr: str | None
    distribution: str | None
    version: str | None
    source_sha256: str
    source_files: int
    timeout_s: float | None

    @property
    def label(self) -> str:
        """The spec with its arguments, e.g. ``bm25 k=20``."""
        arguments = " ".join(f"{k}={v}" for k, v in self.arguments.items())
        return " ".join(part for part in (self.spec, arguments) if part)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in manifest order (``class_name`` as ``class``)."""
        return {
            "spec": self.spec,
            "target": self.target,
            "arguments": dict(self.arguments),
            "class": self.class_name,
            "repr": self.repr,
            "distribution": self.distribution,
            "version": self.version,
            "source_sha256": self.source_sha256,
            "source_files": self.source_files,
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryInfo:
        """The inverse of :meth:`to_dict`; :class:`ManifestError` naming a bad field."""
        w = "memory"
        return cls(
            spec=_get(data, "spec", str, w),
            target=_get(data, "target", str, w),
            arguments=_get(data, "arguments", dict, w),
            class_name=_get(data, "class", str, w),
            repr=_get(data, "repr", _STR, w),
            distribution=_get(data, "distribution", _STR, w),
            version=_get(data, "version", _STR, w),
            source_sha256=_get(data, "source_sha256", str, w),
            source_files=_get(data, "source_files", int, w),
            timeout_s=_get(data, "timeout_s", (int, float, type(None)), w),
        )


@dataclass(frozen=True)
class ShardInfo:
    """Shard ``index`` of ``count`` (0-based); ``file`` holds what the whole run covers."""

    index: int
    count: int
    file: str = "shard.json"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"index": self.index, "count": self.count, "file": self.file}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShardInfo:
        """The inverse of :meth:`to_dict`."""
        w = "shard"
        return cls(
            _get(data, "index", int, w), _get(data, "count", int, w), _get(data, "file", str, w)
        )


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: everything needed to trace a run's numbers back to what made them.

    Typed where other code reads the field (dataset, memory, shard, identity,
    checksum); the descriptive sections (``preflight``, ``llm``, ``judge``,
    ``tokens``, ``counts``, the command-line ``arguments``) are JSON objects as
    written. ``results_sha256`` is the SHA-256 of ``results.jsonl`` (``None`` in
    format 0), so an edited results file is detected when the run is read.
    """

    himga_version: str
    arguments: Mapping[str, Any]
    started_at: str
    finished_at: str
    wall_time_s: float
    dataset: DatasetInfo
    memory: MemoryInfo
    run_identity: str
    preflight: Mapping[str, Any] | None = None
    shard: ShardInfo | None = None
    resumed: int = 0
    llm: Mapping[str, Any] | None = None
    prompt_hashes: Mapping[str, Any] = field(default_factory=dict)
    judge: Mapping[str, Any] | None = None
    tokens: Mapping[str, Any] = field(default_factory=dict)
    counts: Mapping[str, Any] = field(default_factory=dict)
    python: str = ""
    platform: str = ""
    results_sha256: str | None = None
    format: int = MANIFEST_FORMAT

    @property
    def label(self) -> str:
        """The memory spec with its arguments, e.g. ``bm25 k=20``."""
        return self.memory.label

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``manifest.json``."""
        return {
            "format": self.format,
            "himga_version": self.himga_version,
            "arguments": dict(self.arguments),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "wall_time_s": self.wall_time_s,
            "dataset": self.dataset.to_dict(),
            "memory": self.memory.to_dict(),
            "preflight": None if self.preflight is None else dict(self.preflight),
            "run_identity": self.run_identity,
            "shard": None if self.shard is None else self.shard.to_dict(),
            "resumed": self.resumed,
            "llm": None if self.llm is None else dict(self.llm),
            "prompt_hashes": dict(self.prompt_hashes),
            "judge": None if self.judge is None else dict(self.judge),
            "tokens": dict(self.tokens),
            "counts": dict(self.counts),
            "python": self.python,
            "platform": self.platform,
            "results_sha256": self.results_sha256,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        """The inverse of :meth:`to_dict`, for every format up to :data:`MANIFEST_FORMAT`;
        :class:`ManifestError` naming the field otherwise."""
        version = data.get("format", 0)
        if not isinstance(version, int) or version > MANIFEST_FORMAT:
            raise ManifestError(
                f"manifest format {version!r} is newer than this himga reads "
                f"({MANIFEST_FORMAT}): upgrade himga to read this run"
            )
        w = "manifest"
        shard = _get(data, "shard", _OBJECT, w)
        return cls(
            format=version,
            himga_version=_get(data, "himga_version", str, w),
            arguments=_get(data, "arguments", dict, w),
            started_at=_get(data, "started_at", str, w),
            finished_at=_get(data, "finished_at", str, w),
            wall_time_s=_get(data, "wall_time_s", (int, float), w),
            dataset=DatasetInfo.from_dict(_get(data, "dataset", dict, w)),
            memory=MemoryInfo.from_dict(_get(data, "memory", dict, w)),
            preflight=_get(data, "preflight", _OBJECT, w),
            run_identity=_get(data, "run_identity", str, w),
            shard=None if shard is None else ShardInfo.from_dict(shard),
            resumed=_get(data, "resumed", int, w),
            llm=_get(data, "llm", _OBJECT, w),
            prompt_hashes=_get(data, "prompt_hashes", dict, w),
            judge=_get(data, "judge", _OBJECT, w),
            tokens=_get(data, "tokens", dict, w),
            counts=_get(data, "counts", dict, w),
            python=_get(data, "python", str, w),
            platform=_get(data, "platform", str, w),
            results_sha256=_get(data, "results_sha256", _STR, w) if version >= 1 else None,
        )

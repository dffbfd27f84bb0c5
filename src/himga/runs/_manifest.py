"""The run manifest: what was run, on what, when and with what outcome, as typed data.

``manifest.json`` of a run directory is :meth:`Manifest.to_dict`. Format 1 adds
``format`` and ``results_sha256`` to what himga 0.1.0 wrote (format 0, no
``format`` key), which still reads: its files are the same otherwise. The
``costs`` section (:class:`CostsInfo`) came later within format 1: a manifest
without it reads with ``costs`` ``None`` (not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, cast

from typing_extensions import Self

from himga._errors import HimgaError
from himga.eval._oracle import ARMS
from himga.eval.judge import judge_id
from himga.metering import CostSummary

__all__ = [
    "MANIFEST_FORMAT",
    "CostsInfo",
    "DatasetInfo",
    "Manifest",
    "ManifestError",
    "MemoryInfo",
    "ShardInfo",
]

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
_Kinds = Mapping[str, "type | tuple[type, ...]"]
# Field names that are not the JSON key (``class`` is a keyword).
_KEYS = {"class_name": "class"}


class _Record:
    """A section of the manifest: a frozen dataclass whose fields are JSON keys, in order,
    read back with each field's JSON type checked (``_KINDS``) under the name ``_SECTION``."""

    _SECTION: ClassVar[str]
    _KINDS: ClassVar[_Kinds]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in manifest order."""
        found: dict[str, Any] = {}
        for f in fields(cast(Any, self)):
            value = getattr(self, f.name)
            found[_KEYS.get(f.name, f.name)] = dict(value) if isinstance(value, Mapping) else value
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The inverse of :meth:`to_dict`; :class:`ManifestError` naming a bad field."""
        return cls(
            **{
                f.name: _get(data, _KEYS.get(f.name, f.name), cls._KINDS[f.name], cls._SECTION)
                for f in fields(cast(Any, cls))
            }
        )


@dataclass(frozen=True)
class DatasetInfo(_Record):
    """The data of a run: ``name``, file ``path`` and its ``sha256``, the ``--limit``, and how
    many ``samples`` and ``questions`` the run covered."""

    _SECTION = "dataset"
    _KINDS: ClassVar[_Kinds] = {
        "name": str,
        "path": str,
        "sha256": str,
        "limit": _INT,
        "samples": int,
        "questions": int,
    }

    name: str
    path: str
    sha256: str
    limit: int | None
    samples: int
    questions: int


@dataclass(frozen=True)
class MemoryInfo(_Record):
    """The memory of a run: its ``spec`` and resolved ``target``, constructor ``arguments``,
    ``class_name`` (``module:qualname``; ``class`` in JSON) and ``repr``, the
    ``distribution`` and ``version`` that provide it, its source hash and file count, and
    the per-call ``timeout_s``."""

    _SECTION = "memory"
    _KINDS: ClassVar[_Kinds] = {
        "spec": str,
        "target": str,
        "arguments": dict,
        "class_name": str,
        "repr": _STR,
        "distribution": _STR,
        "version": _STR,
        "source_sha256": str,
        "source_files": int,
        "timeout_s": (int, float, type(None)),
    }

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


@dataclass(frozen=True)
class ShardInfo(_Record):
    """Shard ``index`` of ``count``; ``file`` holds what the whole run covers.

    ``index`` counts from 0 in every manifest, those of himga 0.1.0 included (whose
    command line counted from 0 too): ``himga eval --shard I/N`` stores ``I - 1``.
    """

    _SECTION = "shard"
    _KINDS: ClassVar[_Kinds] = {"index": int, "count": int, "file": str}

    index: int
    count: int
    file: str = "shard.json"


@dataclass(frozen=True)
class CostsInfo:
    """``costs``: the model calls of the run, counted at the wire by himga's loopback
    proxies (``calls.jsonl``) and summed per phase over every invocation that wrote
    the run directory -- a resumed run's parts, a merged run's shards.

    ``phases``: calls, errors, tokens and latency of ``preflight``, ``ingest`` and
    ``retrieval`` (the memory's own calls), ``answering`` and ``judging``;
    ``memory_endpoints``: the public URLs the memory's calls went to (empty: the
    memory declared no endpoint -- it is neither an
    :class:`~himga.memory.EndpointUser` nor an :class:`~himga.memory.LLMUser` given
    the run's LLM -- so any calls of its own were not seen); ``answer_endpoint``:
    the answering (and, unless a judge apart has its own, judging) client's
    (``None`` without ``--llm``); ``judge_endpoint``: that of a judge apart
    (``--judge-base-url`` or another provider), ``None`` when the judge calls the
    answerer's. ``phases.models`` (``"models"`` in JSON) splits each phase by model.
    A request answered from the LLM cache makes no call and costs nothing.
    """

    phases: CostSummary
    memory_endpoints: tuple[str, ...] = ()
    answer_endpoint: str | None = None
    judge_endpoint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in manifest order."""
        return {
            "phases": self.phases.to_json(),
            "models": self.phases.models_json(),
            "memory_endpoints": list(self.memory_endpoints),
            "answer_endpoint": self.answer_endpoint,
            "judge_endpoint": self.judge_endpoint,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CostsInfo:
        """The inverse of :meth:`to_dict`; :class:`ManifestError` naming a bad field."""
        where = "costs"
        endpoints = _get(data, "memory_endpoints", list, where)
        if not all(isinstance(url, str) for url in endpoints):
            raise ManifestError(f"{where}.memory_endpoints: expected URLs, got {endpoints!r}")
        # "models" and "judge_endpoint" came later: a manifest without them still reads.
        models = _get(data, "models", list, where) if "models" in data else []
        try:
            phases = CostSummary.from_json(_get(data, "phases", list, where), models)
        except ValueError as exc:
            raise ManifestError(f"{where}.phases: {exc}") from None
        judge = _get(data, "judge_endpoint", _STR, where) if "judge_endpoint" in data else None
        return cls(phases, tuple(endpoints), _get(data, "answer_endpoint", _STR, where), judge)


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: everything needed to trace a run's numbers back to what made them.

    Typed where other code reads the field (dataset, memory, shard, identity,
    checksum, costs); the descriptive sections (``preflight``, ``llm``, ``judge``,
    ``tokens``, ``counts``, the command-line ``arguments``) are JSON objects as
    written. ``costs`` is ``None`` where they were not counted (a manifest from
    before costs, or from a Ray run of a himga that did not count them there).
    ``results_sha256`` is the SHA-256 of ``results.jsonl`` (``None`` in format 0),
    so an edited results file is detected when the run is read. ``history`` holds the
    manifests the run directory held before, oldest first, each as it was written: a
    resumed run (``--resume``) keeps the record of every invocation before it, while the
    other fields describe the latest (``resumed``: what it took from the checkpoint).
    A manifest without the field reads with none.
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
    #: Every judge of the run (the eval's own and those ``himga judge`` added), each as
    #: :meth:`judge_entries` describes; empty in a manifest written before judges were a list.
    judges: tuple[Mapping[str, Any], ...] = ()
    tokens: Mapping[str, Any] = field(default_factory=dict)
    counts: Mapping[str, Any] = field(default_factory=dict)
    python: str = ""
    platform: str = ""
    results_sha256: str | None = None
    costs: CostsInfo | None = None
    #: The fixed question subset (``--questions``): its ``file``, how many ``ids`` and
    #: their ``sha256`` (that of the run identity); ``None`` when every question ran.
    questions: Mapping[str, Any] | None = None
    history: tuple[Mapping[str, Any], ...] = ()
    #: Where each question's context came from: ``"memory"`` or ``"oracle"`` (the gold
    #: evidence turns); a manifest from before arms existed is a memory run's.
    arm: str = "memory"
    format: int = MANIFEST_FORMAT

    @property
    def label(self) -> str:
        """The memory spec with its arguments, e.g. ``bm25 k=20``."""
        return self.memory.label

    def judge_entries(self) -> tuple[Mapping[str, Any], ...]:
        """Every judge of the run: ``id`` (:func:`~himga.eval.judge.judge_id`),
        ``provider``, ``model``, ``prompt`` (its name in the benchmark's bank),
        ``prompt_hashes``, ``temperature``, ``base_url``, ``errors`` (questions it gave
        no score), ``predictions_sha256`` (the answers it judged) and ``scores``: where
        its per-question scores are, ``"results"`` (``results.jsonl``'s ``judge``: the
        eval's own judge) or ``"verdicts"`` (``verdicts.jsonl``). A manifest from before
        the list gives its one ``judge`` as the official prompt's, scores in the results."""
        if self.judges or self.judge is None:
            return self.judges
        judge = dict(self.judge)
        described = {"prompt": "official", "scores": "results", **judge}
        described["id"] = judge_id(str(judge.get("provider")), str(judge.get("model")))
        return (described,)

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
            "judges": [dict(entry) for entry in self.judges],
            "tokens": dict(self.tokens),
            "counts": dict(self.counts),
            "python": self.python,
            "platform": self.platform,
            "results_sha256": self.results_sha256,
            "costs": None if self.costs is None else self.costs.to_dict(),
            "questions": None if self.questions is None else dict(self.questions),
            "history": [dict(record) for record in self.history],
            "arm": self.arm,
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
        costs = _get(data, "costs", _OBJECT, w) if "costs" in data else None
        history = _get(data, "history", list, w) if "history" in data else []
        if not all(isinstance(record, dict) for record in history):
            raise ManifestError(f"{w}.history: expected a list of objects")
        arm = _get(data, "arm", str, w) if "arm" in data else "memory"
        if arm not in ARMS:
            raise ManifestError(f"{w}.arm: expected one of {', '.join(ARMS)}, got {arm!r}")
        judges = _get(data, "judges", list, w) if "judges" in data else []
        if not all(isinstance(j, dict) and isinstance(j.get("id"), str) for j in judges):
            raise ManifestError(f"{w}.judges: expected a list of objects with an 'id'")
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
            judges=tuple(judges),
            tokens=_get(data, "tokens", dict, w),
            counts=_get(data, "counts", dict, w),
            python=_get(data, "python", str, w),
            platform=_get(data, "platform", str, w),
            results_sha256=_get(data, "results_sha256", _STR, w) if version >= 1 else None,
            costs=None if costs is None else CostsInfo.from_dict(costs),
            questions=_get(data, "questions", _OBJECT, w) if "questions" in data else None,
            history=tuple(history),
            arm=arm,
        )

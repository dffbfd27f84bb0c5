"""What identifies a run: the value a checkpoint is keyed by, and a stable fingerprint of it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["RunIdentity"]


def _frozen(value: Any) -> Any:
    """``value`` normalised as JSON stores it (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, sort_keys=True))


@dataclass(frozen=True)
class RunIdentity:
    """Everything that, if it changed, would make a recorded result belong to another run.

    Plain data, independent of live objects: it serialises with :meth:`to_dict`
    and back with :meth:`from_dict`, and :attr:`fingerprint` is the SHA-256 of
    its canonical JSON (sorted keys), stable across processes and machines.

    * the memory: ``memory_spec`` as given and its constructor
      ``memory_arguments``, the ``memory_class`` (``module:qualname``) and its
      ``memory_repr`` (``None`` when the class has no ``__repr__`` of its own),
      the ``memory_distribution`` and ``memory_version`` that provide it, and
      ``memory_source_sha256`` (:func:`himga.memory.memory_provenance`);
    * the agent class and its answer settings (``answer`` -- provider, model,
      temperature, ``max_tokens``; ``None`` without an LLM) and the SHA-256 of
      every answer prompt template (``prompt_hashes``);
    * the ``judge`` (provider, model, temperature and the judge prompts'
      hashes; ``None`` when the run is not judged);
    * the dataset: its name and ``dataset_sha256`` (``None`` when unknown, e.g.
      samples built in memory).
    """

    memory_spec: str
    memory_class: str
    memory_repr: str | None
    memory_source_sha256: str
    agent: str
    prompt_hashes: Mapping[str, str]
    memory_arguments: Mapping[str, Any] = field(default_factory=dict)
    memory_distribution: str | None = None
    memory_version: str | None = None
    answer: Mapping[str, Any] | None = None
    judge: Mapping[str, Any] | None = None
    dataset: str | None = None
    dataset_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        data: dict[str, Any] = _frozen(asdict(self))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunIdentity:
        """The inverse of :meth:`to_dict`; ``ValueError`` naming unknown or missing fields."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown run identity field(s): {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"malformed run identity: {exc}") from exc

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_dict`."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def differences(self, other: RunIdentity) -> list[str]:
        """Each differing field as ``"name: <ours> != <theirs>"``, in field order; nested
        mappings are compared key by key (``"answer.model: ..."``)."""
        ours, theirs = self.to_dict(), other.to_dict()
        found: list[str] = []
        for f in fields(self):
            _diff(f.name, ours[f.name], theirs[f.name], found)
        return found


def _diff(name: str, recorded: Any, current: Any, found: list[str]) -> None:
    if recorded == current:
        return
    if isinstance(recorded, dict) and isinstance(current, dict):
        for key in sorted(set(recorded) | set(current)):
            _diff(f"{name}.{key}", recorded.get(key), current.get(key), found)
        return
    found.append(f"{name}: {_short(recorded)} != {_short(current)}")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."

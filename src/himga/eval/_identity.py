"""What identifies a run: the value a checkpoint is keyed by, and a stable fingerprint of it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from himga._redact import redact_arguments, redact_repr
from himga.agent._agent import prompt_hashes
from himga.llm._protocol import HasTemperature, HasWeights
from himga.memory._registry import MemoryProvenance, memory_provenance
from himga.scoring._result import SEARCH_K

if TYPE_CHECKING:
    from himga.agent._agent import BaseAgent
    from himga.llm._protocol import LLMClient

__all__ = ["SEARCH_K", "RunIdentity", "llm_identity", "memory_config", "run_identity"]


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
      ``memory_arguments`` (each secret as its fingerprint:
      :func:`himga._redact.redact_arguments`), the ``memory_class`` (``module:qualname``) and its
      ``memory_repr`` (``None`` when the class has no ``__repr__`` of its own),
      the ``memory_distribution`` and ``memory_version`` that provide it, and
      ``memory_source_sha256`` (:func:`himga.memory.memory_provenance`);
    * the agent class and its answer settings (``answer`` -- :func:`llm_identity`
      and ``max_tokens``; ``None`` without an LLM) and the SHA-256 of
      every answer prompt template (``prompt_hashes``);
    * the ``judge`` (:func:`llm_identity` of its client and the judge prompts'
      hashes; ``None`` when the run is not judged);
    * the dataset: its name and ``dataset_sha256`` (``None`` when unknown, e.g.
      samples built in memory);
    * ``search_k``: the hits asked of a searchable memory per question (the
      depth of its ranking, so of every recall@k);
    * ``questions``: the SHA-256 of the sorted question ids of a fixed subset
      (``--questions``; :attr:`himga.data.QuestionSubset.sha256`), ``None`` for
      every question -- then left out of :meth:`to_dict`, so the fingerprint of a
      run without a subset is what it was before subsets existed;
    * ``arm``: where the context came from (:data:`himga.eval._oracle.ARMS`); left out
      of :meth:`to_dict` for ``"memory"``, so a memory run's fingerprint is what it
      was before arms existed.
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
    search_k: int = SEARCH_K
    questions: str | None = None
    arm: str = "memory"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``questions`` only when there is a subset,
        ``arm`` only when it is not ``"memory"``)."""
        data: dict[str, Any] = _frozen(asdict(self))
        if self.questions is None:
            del data["questions"]
        if self.arm == "memory":
            del data["arm"]
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
            _diff(f.name, ours.get(f.name), theirs.get(f.name), found)
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


def memory_config(memory: object) -> str | None:
    """``repr(memory)`` when its class defines one (a dataclass's names its fields).

    ``object.__repr__`` only names an address, different in every process, so a
    memory without its own ``__repr__`` is identified by its class alone. Secrets in
    it are fingerprinted (:func:`himga._redact.redact_repr`): the repr is recorded.
    """
    if type(memory).__repr__ is object.__repr__:
        return None
    return redact_repr(repr(memory))


def run_identity(
    agent: BaseAgent,
    *,
    memory_spec: str | None = None,
    memory_arguments: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    dataset_sha256: str | None = None,
    search_k: int = SEARCH_K,
    provenance: MemoryProvenance | None = None,
) -> RunIdentity:
    """The :class:`RunIdentity` of evaluating ``agent``: its memory (class, ``repr``,
    providing distribution and source hash), answer settings and prompt hashes,
    plus what the caller knows -- the spec the memory was made from (default:
    its class), its constructor arguments, the judge, the dataset and the search depth.
    ``provenance`` is the memory's when the caller has computed it already (default:
    that of its class's module, hashed here)."""
    memory = agent.memory
    memory_class = f"{type(memory).__module__}:{type(memory).__qualname__}"
    if provenance is None:
        provenance = memory_provenance([type(memory).__module__])
    llm = agent.llm
    answer = None if llm is None else {**llm_identity(llm), "max_tokens": agent.max_tokens}
    return RunIdentity(
        memory_spec=memory_spec or memory_class,
        memory_arguments=redact_arguments(memory_arguments or {}),
        memory_class=memory_class,
        memory_repr=memory_config(memory),
        memory_distribution=provenance.distribution,
        memory_version=provenance.version,
        memory_source_sha256=provenance.source_sha256,
        agent=f"{type(agent).__module__}:{type(agent).__qualname__}",
        answer=answer,
        prompt_hashes=prompt_hashes(),
        judge=None if judge is None else dict(judge),
        dataset=dataset,
        dataset_sha256=dataset_sha256,
        search_k=search_k,
    )


def llm_identity(llm: LLMClient) -> dict[str, Any]:
    """What identifies a model client in a run, the answerer's and the judge's alike:
    provider, model, temperature, and for a model whose weights are a local file
    (``HasWeights``) its ``weights`` -- the file's SHA-256, the runtime's name and version."""
    identity: dict[str, Any] = {
        "provider": llm.provider,
        "model": llm.model,
        "temperature": temperature_of(llm),
    }
    if isinstance(llm, HasWeights):
        identity["weights"] = dict(llm.weights)
    return identity


def temperature_of(llm: object) -> float | None:
    """The sampling temperature ``llm`` declares (``HasTemperature``), ``None`` if none."""
    if isinstance(llm, HasTemperature):
        temperature = llm.temperature
        if isinstance(temperature, (int, float)):
            return temperature
    return None

"""Run specs: the plain-data recipe of an agent, which any process can build the agent from."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from himga._errors import HimgaError
from himga.agent._agent import BaseAgent
from himga.eval._identity import SEARCH_K, RunIdentity, run_identity
from himga.llm._protocol import LLMClient
from himga.memory._protocol import BaseMemory, LLMUser
from himga.memory._registry import (
    MemoryProvenance,
    ResolvedMemory,
    memory_provenance,
    resolve_memory,
)

if TYPE_CHECKING:
    from himga.llm import SDKClient
    from himga.metering import RunMeter

__all__ = ["LLM_SETTINGS", "AgentSpec", "AgentSpecError"]

#: The :func:`~himga.llm.get_client` settings a spec may carry (never ``api_key``);
#: ``cache`` is the path of an ``--llm-cache`` SQLite file every process shares;
#: ``threads``, ``context`` and ``seed`` configure a ``local`` model's server.
LLM_SETTINGS = (
    "base_url",
    "cache",
    "max_concurrency",
    "max_retries",
    "timeout",
    "temperature",
    "max_tokens",
    "threads",
    "context",
    "seed",
)


class AgentSpecError(HimgaError, ValueError):
    """An :class:`AgentSpec` field is not plain data, names an unknown setting or holds a key."""


def _plain(name: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as a JSON round trip gives it back; refuses what JSON cannot carry."""
    try:
        text = json.dumps(dict(value), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AgentSpecError(f"AgentSpec.{name} must be plain JSON data: {exc}") from exc
    plain: dict[str, Any] = json.loads(text)
    return plain


@dataclass(frozen=True, eq=True)
class AgentSpec:
    """How to build a :class:`~himga.agent.BaseAgent` anywhere: plain data, picklable, keyless.

    * ``memory``: a registered memory name or ``module:attr`` factory, as for
      ``himga eval --memory``, and ``memory_arguments`` its constructor keyword
      arguments (JSON values);
    * ``llm``: the provider (``"anthropic"``, ``"openai"``, ``"local"``; ``None``
      for a retrieval-only agent), ``model`` (``None``: the provider's default, or
      ``$HIMGA_MODEL`` where the agent is built; for ``"local"`` the GGUF file's
      path, which must hold the same file in every process: its SHA-256 is in
      the run identity) and ``llm_settings``, keyword
      arguments of :func:`~himga.llm.get_client` among :data:`LLM_SETTINGS`;
    * ``max_tokens``: the reply budget of each answer.

    API keys never enter a spec: :meth:`build` lets the client read
    ``$ANTHROPIC_API_KEY`` / ``$OPENAI_API_KEY`` from the environment of the
    process that builds it, and an ``api_key`` setting raises
    :class:`AgentSpecError`. The run identity -- the checkpoint's header and
    the ``run_identity`` fingerprint of the manifest -- is
    :meth:`run_identity`: the spec plus what the built agent reports (memory
    class, ``repr``, providing distribution and source hash, resolved model,
    prompt hashes), so two processes that build different agents from one
    spec disagree on it.
    """

    memory: str
    memory_arguments: Mapping[str, Any] = field(default_factory=dict)
    llm: str | None = None
    model: str | None = None
    llm_settings: Mapping[str, Any] = field(default_factory=dict)
    max_tokens: int = 128

    def __post_init__(self) -> None:
        if not isinstance(self.memory, str) or not self.memory.strip():
            raise AgentSpecError(f"AgentSpec.memory must be a memory spec, got {self.memory!r}")
        if self.llm is None and (self.model is not None or self.llm_settings):
            raise AgentSpecError("AgentSpec.model and llm_settings need llm (a provider)")
        if "api_key" in self.llm_settings:
            raise AgentSpecError(
                "AgentSpec.llm_settings must not hold api_key: a spec is shipped and "
                "recorded; each process reads the key from its own environment "
                "(ANTHROPIC_API_KEY / OPENAI_API_KEY)"
            )
        unknown = sorted(set(self.llm_settings) - set(LLM_SETTINGS))
        if unknown:
            raise AgentSpecError(
                f"AgentSpec.llm_settings: unknown setting(s) {', '.join(unknown)}; "
                f"known: {', '.join(LLM_SETTINGS)}"
            )
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise AgentSpecError(f"AgentSpec.max_tokens must be an int, got {self.max_tokens!r}")
        object.__setattr__(
            self, "memory_arguments", _plain("memory_arguments", self.memory_arguments)
        )
        object.__setattr__(self, "llm_settings", _plain("llm_settings", self.llm_settings))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {
            "memory": self.memory,
            "memory_arguments": dict(self.memory_arguments),
            "llm": self.llm,
            "model": self.model,
            "llm_settings": dict(self.llm_settings),
            "max_tokens": self.max_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSpec:
        """The inverse of :meth:`to_dict`; :class:`AgentSpecError` naming unknown fields."""
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise AgentSpecError(f"unknown AgentSpec field(s): {', '.join(unknown)}")
        return cls(**data)

    def resolve_memory(self) -> ResolvedMemory:
        """The memory spec resolved as ``himga eval`` resolves it (raises
        :class:`~himga.memory.MemoryLoadError`)."""
        return resolve_memory(self.memory, self.memory_arguments)

    def build_llm(self) -> LLMClient | None:
        """The answering client, ``None`` without ``llm``; the key comes from the environment."""
        return None if self.llm is None else self._client()

    def _client(self, **overrides: Any) -> SDKClient:
        """The client of these settings, ``overrides`` (``get_client`` arguments) applied."""
        from himga.llm import get_client

        assert self.llm is not None
        return get_client(self.llm, model=self.model, **{**self.llm_settings, **overrides})

    def metered_llm(
        self, upstream_of: Callable[[str], str], direct: SDKClient | None = None
    ) -> SDKClient:
        """The client of these settings calling through a recording proxy: the URL
        ``upstream_of`` gives for the base URL ``direct`` (default: a new client of
        these settings) calls, sharing its cache."""
        direct = direct if direct is not None else self._client()
        return self._client(base_url=upstream_of(direct.base_url), cache=direct.cache)

    def build(self, meter: RunMeter | None = None) -> BaseAgent:
        """A new agent: the memory from its factory and arguments, the LLM client, the budget
        (``meter``: see :meth:`assemble`)."""
        agent, _ = self.assemble(meter)
        return agent

    def assemble(
        self, meter: RunMeter | None = None, resolved: ResolvedMemory | None = None
    ) -> tuple[BaseAgent, Callable[[], BaseMemory]]:
        """A new agent (:meth:`build`), and the factory of a fresh memory like its own --
        what replaces one stuck in a timed-out call.

        A memory that builds with an LLM (MAGMA, an :class:`~himga.memory.LLMUser`)
        is given a client of the agent's provider, model and settings. With
        ``meter`` every model call the agent makes goes through its loopback
        proxies, as ``himga eval`` meters a run: the memory's own endpoint (an
        :class:`~himga.memory.EndpointUser`) routed through a memory proxy, the
        memory's client calling through one too, and the answering client through
        the answer proxy; the clients share one cache object, so a cached reply costs
        no call on either path. Without it the memory shares the answering client.
        ``resolved`` is this spec's memory when the caller has resolved it already
        (default: :meth:`resolve_memory`).
        """
        if resolved is None:
            resolved = self.resolve_memory()
        direct = None if self.llm is None else self._client()
        answering = direct
        if meter is not None and direct is not None:
            answering = self.metered_llm(meter.answer_upstream, direct)

        @functools.cache
        def memory_llm(direct: SDKClient) -> SDKClient:
            # Made on first use, so a memory without an LLM starts no memory proxy for it.
            if meter is None:
                return direct
            upstream = meter.memory_upstream(direct.base_url)
            return self._client(base_url=upstream, cache=direct.cache)

        def create_memory() -> BaseMemory:
            memory: BaseMemory = resolved.create()
            if meter is not None:
                meter.route(memory)
            if direct is not None and isinstance(memory, LLMUser):
                memory.attach_llm(memory_llm(direct))
            return memory

        agent = BaseAgent(memory=create_memory(), llm=answering, max_tokens=self.max_tokens)
        return agent, create_memory

    def run_identity(
        self,
        agent: BaseAgent | None = None,
        *,
        judge: Mapping[str, Any] | None = None,
        dataset: str | None = None,
        dataset_sha256: str | None = None,
        search_k: int = SEARCH_K,
        provenance: MemoryProvenance | None = None,
    ) -> RunIdentity:
        """The :class:`~himga.eval.RunIdentity` of evaluating ``agent`` (default: a new
        :meth:`build`) built from this spec, with the judge, dataset and search depth
        the caller knows, and the memory's ``provenance`` when the caller has it
        (default: :meth:`provenance`, computed here).
        """
        built = agent if agent is not None else self.build()
        if provenance is None:
            provenance = self.provenance(built.memory)
        return run_identity(
            built,
            memory_spec=self.memory,
            memory_arguments=self.memory_arguments,
            judge=judge,
            dataset=dataset,
            dataset_sha256=dataset_sha256,
            search_k=search_k,
            provenance=provenance,
        )

    def provenance(
        self, memory: BaseMemory, resolved: ResolvedMemory | None = None
    ) -> MemoryProvenance:
        """The provenance of ``memory``, built from this spec: it covers both the module
        the spec names and the module of the memory's class (a factory may live apart
        from the class). ``resolved`` is this spec's memory when the caller has resolved
        it already (default: :meth:`resolve_memory`)."""
        target = (resolved if resolved is not None else self.resolve_memory()).target
        return memory_provenance([target.partition(":")[0].strip(), type(memory).__module__])

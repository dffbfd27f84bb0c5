"""The settings of one evaluation, in one frozen object."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from himga.data.schema import Sample
from himga.eval._identity import SEARCH_K, RunIdentity
from himga.eval._oracle import ARMS, Arm
from himga.eval._progress import ProgressObserver
from himga.eval._spec import AgentSpec
from himga.memory._protocol import BaseMemory
from himga.scoring._result import EvalResult

__all__ = ["EvalOptions", "EvalSettings", "Executor", "PhaseMeter"]


class Executor(Protocol):
    """Where an evaluation runs when not here (:class:`~himga.eval.RayExecutor`): it builds
    the agent from ``spec`` where it runs, and returns what evaluating it here with
    ``options`` would, one result per question in order, recorded in
    ``options.checkpoint`` (a ``Ledger`` does the bookkeeping)."""

    def run(
        self,
        samples: Iterable[Sample],
        spec: AgentSpec,
        options: EvalOptions,
        stop: threading.Event | None = None,
    ) -> list[EvalResult]:
        """Evaluate every question of ``samples``; once ``stop`` is set (the caller was
        interrupted: it runs on a thread of its own), stop soon, by raising."""
        ...


class PhaseMeter(Protocol):
    """Counts what the memory spends per phase of the run (a
    :class:`~himga.metering.RecordingProxy` its endpoint is routed through):
    the loop enters ``phase(name)`` on the thread that calls the memory, so every
    memory call falls in exactly one window."""

    def phase(self, name: str, /) -> AbstractContextManager[None]:
        """Attribute what arrives inside the ``with`` block to ``name``."""
        ...


@dataclass(frozen=True)
class EvalOptions:
    """How :func:`~himga.eval.run_eval` evaluates (see it for each setting in full).

    * ``search_k``: hits asked of a searchable memory per question -- it changes
      the results, so it is part of the run identity (``RunIdentity.search_k``);
    * ``checkpoint``: the JSONL file finished questions are recorded in and
      resumed from; ``identity``: the run identity that keys it (default: the
      agent's, with ``search_k``) -- given, its ``search_k`` must equal this one;
    * ``max_concurrency``: LLM calls in flight (default: the client's);
    * ``memory_timeout``: seconds after which a memory call fails; ``memory_factory``:
      where a fresh memory comes from when one is stuck in a timed-out call;
    * ``executor``: where the work runs (an :class:`Executor` such as
      :class:`~himga.eval.RayExecutor`; ``None``: here);
    * ``memory_meter``: a :class:`PhaseMeter` the loop windows the memory's calls
      in -- ``"ingest"`` around each sample's reset and ingest, ``"retrieval"``
      around each question's retrieve and search; not with an ``executor``
      (its workers' calls happen elsewhere: refused; a
      :class:`~himga.eval.RayExecutor` meters its workers' own, ``on_call``);
    * ``show_progress``: a progress bar on stderr; ``progress_observer``: told each
      turn ingested, passage embedded and question finished as it happens, bar or no
      bar (how a :class:`~himga.eval.RayExecutor`'s workers report to the driver);
    * ``arm``: where each question's context comes from -- ``"memory"`` (its
      retrieval) or ``"oracle"`` (its gold evidence turns, :mod:`himga.eval._oracle`;
      the memory is still reset and fed, but never asked).
    """

    show_progress: bool = True
    checkpoint: str | os.PathLike[str] | None = None
    max_concurrency: int | None = None
    memory_timeout: float | None = None
    memory_factory: Callable[[], BaseMemory] | None = None
    identity: RunIdentity | None = None
    executor: Executor | None = None
    search_k: int = SEARCH_K
    memory_meter: PhaseMeter | None = None
    arm: Arm = "memory"
    progress_observer: ProgressObserver | None = None

    def __post_init__(self) -> None:
        if self.arm not in ARMS:
            raise ValueError(f"arm must be one of {', '.join(ARMS)}, got {self.arm!r}")
        if isinstance(self.search_k, bool) or not isinstance(self.search_k, int):
            raise TypeError(f"search_k must be an int, got {self.search_k!r}")
        if self.search_k < 1:
            raise ValueError(f"search_k must be >= 1, got {self.search_k}")
        if self.identity is not None and self.identity.search_k != self.search_k:
            raise ValueError(
                f"the run identity was made for search_k={self.identity.search_k}, the "
                f"options search {self.search_k}: make the identity with search_k="
                f"{self.search_k}"
            )

    @classmethod
    def of(cls, options: EvalOptions | None, settings: Mapping[str, Any]) -> EvalOptions:
        """``options`` (default: all defaults) with the keyword ``settings`` given alongside
        it applied over it -- the keyword arguments ``run_eval`` has always taken."""
        return dataclasses.replace(options or cls(), **settings)


class EvalSettings(TypedDict, total=False):
    """The fields of :class:`EvalOptions` as keyword arguments of ``run_eval``."""

    show_progress: bool
    checkpoint: str | os.PathLike[str] | None
    max_concurrency: int | None
    memory_timeout: float | None
    memory_factory: Callable[[], BaseMemory] | None
    identity: RunIdentity | None
    executor: Executor | None
    search_k: int
    memory_meter: PhaseMeter | None
    arm: Arm
    progress_observer: ProgressObserver | None

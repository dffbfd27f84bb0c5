"""``run_eval``: evaluate an agent (or a spec of one) here or on an executor."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterable

from typing_extensions import Unpack

from himga.agent._agent import BaseAgent
from himga.data.schema import Sample
from himga.eval._identity import SEARCH_K
from himga.eval._ledger import DuplicateQuestionError
from himga.eval._local import evaluate_here
from himga.eval._options import EvalOptions, EvalSettings
from himga.eval._spec import AgentSpec
from himga.scoring._result import EvalResult

__all__ = ["SEARCH_K", "DuplicateQuestionError", "arun_eval", "run_eval"]


async def arun_eval(
    samples: Iterable[Sample],
    *,
    agent: BaseAgent | AgentSpec,
    options: EvalOptions | None = None,
    **settings: Unpack[EvalSettings],
) -> list[EvalResult]:
    """The coroutine behind :func:`run_eval`, for callers already inside an event loop."""
    chosen = EvalOptions.of(options, settings)
    executor = chosen.executor
    if isinstance(agent, AgentSpec):
        if executor is not None:
            if chosen.memory_meter is not None:
                raise ValueError(
                    "memory_meter cannot window the memory's calls on an executor's workers "
                    "(they run elsewhere, each with its own memory): meter a local run, or "
                    "give a RayExecutor an on_call (each worker meters its own)"
                )
            if chosen.max_concurrency is not None or chosen.memory_factory is not None:
                raise ValueError(
                    "with an executor, LLM concurrency is the executor's llm_concurrency_total "
                    "and each worker's memory factory is the spec's: pass neither "
                    "max_concurrency nor memory_factory"
                )
            stop = threading.Event()
            try:
                return await asyncio.to_thread(executor.run, samples, agent, chosen, stop)
            except asyncio.CancelledError:
                # Ctrl-C cancels this task, but asyncio.run then waits for the thread:
                # tell the executor to end it (and its workers) rather than run on.
                stop.set()
                raise
        spec = agent
        agent = spec.build()
        chosen = dataclasses.replace(
            chosen,
            memory_factory=chosen.memory_factory or spec.resolve_memory().create,
            identity=chosen.identity or spec.run_identity(agent, search_k=chosen.search_k),
        )
    elif executor is not None:
        raise TypeError(
            "an executor builds the agent in its workers: pass agent=AgentSpec(...), "
            f"not a live {type(agent).__name__}"
        )
    return await evaluate_here(samples, agent, chosen)


def run_eval(
    samples: Iterable[Sample],
    *,
    agent: BaseAgent | AgentSpec,
    options: EvalOptions | None = None,
    **settings: Unpack[EvalSettings],
) -> list[EvalResult]:
    """Evaluate ``agent`` on every question of ``samples``; one result per question, in order.

    Per sample: ``memory.reset()``, then the conversation is ingested once
    (without its questions, answers, evidence or metadata, and under neutral
    sample, session and turn ids -- ``S<k>``, ``D<k>:<n>`` -- since LongMemEval's
    name the evidence; search hits are mapped back to the sample's turn ids),
    then each question is
    retrieved -- and searched, ``search_k`` hits deep (default :data:`SEARCH_K`,
    50), when the memory is a :class:`~himga.memory.SearchableMemory`. With an LLM the answers are
    requested concurrently, at most ``max_concurrency`` (default: the client's
    ``max_concurrency``) in flight, while later samples are ingested. A call
    that still fails after the client's retries becomes a result with ``error``
    set; the run goes on. Without an LLM (``agent.llm is None``) the results
    carry the retrieval only.

    Memory errors are data: a memory call that raises, returns a non-``str``
    from ``retrieve`` (or a malformed ``search`` result), or -- with
    ``memory_timeout`` seconds set -- does not return in time, becomes a
    :class:`~himga.eval.MemoryCallError` on that question's result
    (``memory_error``; no LLM call is made for it) and the run goes on. A
    failed ``reset`` or ``ingest`` fails every question of its sample. A call
    that timed out is left running on its own daemon thread and the memory is
    not called again until it returns; if it is still running when the next
    sample starts, that sample runs on a fresh memory from ``memory_factory``
    (without one, it fails too). See ``docs/eval.md``.

    ``checkpoint`` names a JSONL file: every finished question is appended and
    fsync'd, and a rerun with the same file skips what is done (errors of
    either kind are retried), so an interrupted run -- even by ``kill -9`` --
    resumes without duplicating or losing a question. The file's header is the
    run's ``identity`` (default: :func:`run_identity` of ``agent``: memory
    class, ``repr``, distribution and source hash, answer settings, prompt
    hashes); a rerun under another raises
    :class:`~himga.eval.CheckpointMismatchError` naming the differing fields.
    Two memories of one class without their own ``__repr__`` count as the same
    configuration, whatever their parameters. A recorded result whose question,
    answer, category or evidence differ from the sample's is refused the same
    way (another dataset version). Raises
    :class:`DuplicateQuestionError` when two questions share a
    ``(sample_id, question_id)``.

    Every setting is a field of ``options`` (:class:`~himga.eval.EvalOptions`);
    each may also be given as a keyword argument of the same name, which
    overrides the field (``run_eval(samples, agent=a, checkpoint="c.jsonl")``).
    ``search_k`` is part of the run identity, so a checkpoint made at another
    depth is refused.

    ``agent`` may be an :class:`~himga.eval.AgentSpec`: the agent is then built
    from it (the memory factory and the identity too, unless given). With an
    ``executor`` (:class:`~himga.eval.RayExecutor`; the default runs here) the
    spec is built in the executor's workers, and the results, checkpoint and
    identity are those of the local run; see ``docs/scale.md``.
    """
    return asyncio.run(arun_eval(samples, agent=agent, options=options, **settings))

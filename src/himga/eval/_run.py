"""The evaluation loop: ingest each sample once, retrieve per question, answer concurrently."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from himga._errors import HimgaError
from himga.agent._agent import BaseAgent, prompt_hashes
from himga.data.schema import QAPair, Sample
from himga.eval._checkpoint import Checkpoint, CheckpointMismatchError
from himga.eval._identity import RunIdentity
from himga.eval._memory_calls import GuardedMemory, MemoryCallFailed
from himga.eval._result import EvalResult, MemoryCallError
from himga.eval._spec import AgentSpec
from himga.llm._protocol import ChatMessage
from himga.memory._protocol import BaseMemory, SearchableMemory
from himga.memory._registry import memory_provenance

if TYPE_CHECKING:
    from himga.eval._ray import RayExecutor

__all__ = [
    "SEARCH_K",
    "DuplicateQuestionError",
    "arun_eval",
    "memory_config",
    "run_eval",
    "run_identity",
]

SEARCH_K = 50


class DuplicateQuestionError(HimgaError, ValueError):
    """Two questions of the evaluated samples share ``(sample_id, question_id)``."""


def memory_config(memory: object) -> str | None:
    """``repr(memory)`` when its class defines one (a dataclass's names its fields).

    ``object.__repr__`` only names an address, different in every process, so a
    memory without its own ``__repr__`` is identified by its class alone.
    """
    if type(memory).__repr__ is object.__repr__:
        return None
    return repr(memory)


def run_identity(
    agent: BaseAgent,
    *,
    memory_spec: str | None = None,
    memory_arguments: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    dataset_sha256: str | None = None,
) -> RunIdentity:
    """The :class:`RunIdentity` of evaluating ``agent``: its memory (class, ``repr``,
    providing distribution and source hash), answer settings and prompt hashes,
    plus what the caller knows -- the spec the memory was made from (default:
    its class), its constructor arguments, the judge and the dataset."""
    memory = agent.memory
    memory_class = f"{type(memory).__module__}:{type(memory).__qualname__}"
    provenance = memory_provenance([type(memory).__module__])
    llm = agent.llm
    answer = None
    if llm is not None:
        temperature = getattr(llm, "temperature", None)
        answer = {
            "provider": llm.provider,
            "model": llm.model,
            "temperature": temperature if isinstance(temperature, (int, float)) else None,
            "max_tokens": agent.max_tokens,
        }
    return RunIdentity(
        memory_spec=memory_spec or memory_class,
        memory_arguments=dict(memory_arguments or {}),
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
    )


def _conversation_only(sample: Sample) -> tuple[Sample, dict[str, str]]:
    """What the agent gets, and the map from its turn ids back to the sample's.

    The gold (questions, answers, evidence) and the auxiliary metadata are
    removed, and the sample, session and turn ids replaced by neutral ones
    (``S<k>``, ``D<k>:<n>``, 1-based positions): LongMemEval's ids name the
    gold -- evidence sessions are ``answer_...``, abstention questions ``..._abs``.
    """
    back: dict[str, str] = {}
    sessions = []
    for k, session in enumerate(sample.sessions, start=1):
        messages = []
        for n, message in enumerate(session.messages, start=1):
            turn_id = None
            if message.turn_id is not None:
                turn_id = f"D{k}:{n}"
                back[turn_id] = message.turn_id
            messages.append(dataclasses.replace(message, turn_id=turn_id))
        sessions.append(dataclasses.replace(session, session_id=f"S{k}", messages=messages))
    neutral_id = hashlib.sha256(sample.sample_id.encode("utf-8")).hexdigest()[:16]
    conversation = dataclasses.replace(
        sample, sample_id=f"sample-{neutral_id}", sessions=sessions, qa_pairs=(), metadata={}
    )
    return conversation, back


def _failed(
    sample: Sample, texts: Mapping[str | None, str], qa: QAPair, failure: MemoryCallFailed
) -> EvalResult:
    error = MemoryCallError(
        sample_id=sample.sample_id,
        question_id=qa.question_id,
        method=failure.method,
        type=failure.error_type,
        message=failure.message,
    )
    return _result(sample, texts, qa, context="", ranked=None, latency=0.0, memory_error=error)


def _result(
    sample: Sample,
    texts: Mapping[str | None, str],
    qa: QAPair,
    *,
    context: str,
    ranked: tuple[str | None, ...] | None,
    latency: float,
    memory_error: MemoryCallError | None = None,
) -> EvalResult:
    return EvalResult(
        sample_id=sample.sample_id,
        question_id=qa.question_id,
        dataset=sample.dataset,
        category=qa.category,
        question=qa.question,
        answer=qa.answer,
        adversarial=qa.adversarial,
        evidence_turns=tuple(qa.evidence_turns),
        evidence_texts=tuple(texts.get(turn) for turn in qa.evidence_turns),
        context=context,
        ranked_turn_ids=ranked,
        retrieval_latency_s=latency,
        memory_error=memory_error,
    )


def _prepare(
    agent: BaseAgent,
    guarded: GuardedMemory,
    searchable: bool,
    sample: Sample,
    pending: Sequence[QAPair],
    prompts: bool,
) -> list[tuple[EvalResult, list[ChatMessage]]]:
    """Runs on the memory thread: reset, ingest once, retrieve (and search) per question.

    ``agent`` calls the memory through ``guarded``: a failed reset or ingest
    fails every pending question of the sample, a failed retrieve or search
    only its own. With ``prompts`` each question's prompt is built here too,
    while the agent still holds this sample's state.
    """
    conversation, sample_turn_id = _conversation_only(sample)
    texts = {message.turn_id: message.content for _, message in sample.iter_turns()}
    try:
        guarded.reset()
        agent.ingest_sample(conversation)
    except MemoryCallFailed as failure:
        return [(_failed(sample, texts, qa, failure), []) for qa in pending]
    prepared: list[tuple[EvalResult, list[ChatMessage]]] = []
    for qa in pending:
        started = time.perf_counter()
        try:
            context = agent.retrieve(qa.question)
            ranked = None
            if searchable:
                # A hit naming no ingested turn cannot be evidence: None.
                hits = guarded.search_turn_ids(qa.question, SEARCH_K)
                ranked = tuple(sample_turn_id.get(turn_id or "") for turn_id in hits)
        except MemoryCallFailed as failure:
            prepared.append((_failed(sample, texts, qa, failure), []))
            continue
        result = _result(
            sample, texts, qa, context=context, ranked=ranked, latency=time.perf_counter() - started
        )
        prompt = agent.build_prompt(qa.question, context) if prompts else []
        prepared.append((result, prompt))
    return prepared


def _enqueue(
    order: list[tuple[str, str]], seen: set[tuple[str, str]], sample: Sample, qa: QAPair
) -> tuple[str, str]:
    """Append the key of ``qa`` to ``order``; :class:`DuplicateQuestionError` if seen before."""
    key = (sample.sample_id, qa.question_id)
    if key in seen:
        raise DuplicateQuestionError(
            f"sample {sample.sample_id!r}: question id {qa.question_id!r} repeats"
        )
    seen.add(key)
    order.append(key)
    return key


def _check_resumed(store: Checkpoint | None, stored: EvalResult, qa: QAPair) -> None:
    """Refuse a recorded result whose question is not ``qa`` as now loaded."""
    recorded = (stored.question, stored.answer, stored.category, stored.evidence_turns)
    loaded = (qa.question, qa.answer, qa.category, tuple(qa.evidence_turns))
    if store is not None and recorded != loaded:
        raise CheckpointMismatchError(
            f"{store.path}: sample {stored.sample_id!r} question {stored.question_id!r} was "
            "recorded with another question, answer, category or evidence (another dataset "
            "version?); use another checkpoint file"
        )


async def _answer(
    agent: BaseAgent, result: EvalResult, prompt: list[ChatMessage], slots: asyncio.Semaphore
) -> EvalResult:
    async with slots:
        started = time.perf_counter()
        try:
            answer = await agent.acomplete(prompt, context=result.context)
        except Exception as exc:  # failed after the client's own retries: report, don't score
            return dataclasses.replace(
                result,
                error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - started,
            )
    return dataclasses.replace(
        result,
        prediction=answer.text,
        latency_s=answer.latency_s,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        model=answer.model,
    )


async def arun_eval(
    samples: Iterable[Sample],
    *,
    agent: BaseAgent | AgentSpec,
    show_progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    max_concurrency: int | None = None,
    memory_timeout: float | None = None,
    memory_factory: Callable[[], BaseMemory] | None = None,
    identity: RunIdentity | None = None,
    executor: RayExecutor | None = None,
) -> list[EvalResult]:
    """The coroutine behind :func:`run_eval`, for callers already inside an event loop."""
    if isinstance(agent, AgentSpec):
        if executor is not None:
            if max_concurrency is not None or memory_factory is not None:
                raise ValueError(
                    "with an executor, LLM concurrency is the executor's llm_concurrency_total "
                    "and each worker's memory factory is the spec's: pass neither "
                    "max_concurrency nor memory_factory"
                )
            return await asyncio.to_thread(
                executor.evaluate,
                samples,
                spec=agent,
                show_progress=show_progress,
                checkpoint=checkpoint,
                memory_timeout=memory_timeout,
                identity=identity,
            )
        spec = agent
        agent = spec.build()
        memory_factory = memory_factory or spec.resolve_memory().create
        identity = identity or spec.run_identity(agent)
    elif executor is not None:
        raise TypeError(
            "an executor builds the agent in its workers: pass agent=AgentSpec(...), "
            f"not a live {type(agent).__name__}"
        )
    llm = agent.llm
    if max_concurrency is not None:
        limit = max_concurrency
    else:
        limit = llm.max_concurrency if llm is not None else 1
    if limit < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {limit}")
    slots = asyncio.Semaphore(limit)
    guarded = GuardedMemory(agent.memory, memory_timeout, memory_factory)
    searchable = isinstance(agent.memory, SearchableMemory)
    guarded_agent = agent.with_memory(guarded)
    store = None
    if checkpoint is not None:
        store = Checkpoint(checkpoint, (identity or run_identity(agent)).to_dict())
    finished: dict[tuple[str, str], EvalResult] = {}
    if store is not None:
        finished = {
            key: r for key, r in store.open().items() if r.error is None and r.memory_error is None
        }
    total = (
        sum(len(sample.qa_pairs) for sample in samples) if isinstance(samples, Sequence) else None
    )
    progress = tqdm(total=total, disable=not show_progress, unit="q", desc="eval")
    order: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    tasks: list[asyncio.Task[None]] = []

    def record(result: EvalResult) -> None:
        finished[result.key] = result
        if store is not None:
            store.append(result)
        progress.update(1)

    async def answer_and_record(result: EvalResult, prompt: list[ChatMessage]) -> None:
        record(await _answer(agent, result, prompt, slots))

    loop = asyncio.get_running_loop()
    # One dedicated thread owns the memory (ingest, retrieve, search, reset), so
    # in-flight LLM calls progress while the next sample is ingested, and memories
    # that are not thread-safe are still only ever touched from one thread.
    memory_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="himga-memory")
    try:
        for sample in samples:
            pending = []
            for qa in sample.qa_pairs:
                key = _enqueue(order, seen, sample, qa)
                if key in finished:
                    _check_resumed(store, finished[key], qa)
                    progress.update(1)
                else:
                    pending.append(qa)
            if not pending:
                continue
            prepared = await loop.run_in_executor(
                memory_thread,
                _prepare,
                guarded_agent,
                guarded,
                searchable,
                sample,
                pending,
                llm is not None,
            )
            for result, prompt in prepared:
                if llm is None or result.memory_error is not None:
                    record(result)
                else:
                    tasks.append(asyncio.ensure_future(answer_and_record(result, prompt)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        memory_thread.shutdown(wait=True)
        guarded.close()
        progress.close()
        if store is not None:
            store.close()
    return [finished[key] for key in order]


def run_eval(
    samples: Iterable[Sample],
    *,
    agent: BaseAgent | AgentSpec,
    show_progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    max_concurrency: int | None = None,
    memory_timeout: float | None = None,
    memory_factory: Callable[[], BaseMemory] | None = None,
    identity: RunIdentity | None = None,
    executor: RayExecutor | None = None,
) -> list[EvalResult]:
    """Evaluate ``agent`` on every question of ``samples``; one result per question, in order.

    Per sample: ``memory.reset()``, then the conversation is ingested once
    (without its questions, answers, evidence or metadata, and under neutral
    sample, session and turn ids -- ``S<k>``, ``D<k>:<n>`` -- since LongMemEval's
    name the evidence; search hits are mapped back to the sample's turn ids),
    then each question is
    retrieved -- and searched (k = 50) when the memory is a
    :class:`~himga.memory.SearchableMemory`. With an LLM the answers are
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

    ``agent`` may be an :class:`~himga.eval.AgentSpec`: the agent is then built
    from it (the memory factory and the identity too, unless given). With an
    ``executor`` (:class:`~himga.eval.RayExecutor`; the default runs here) the
    spec is built in the executor's workers, and the results, checkpoint and
    identity are those of the local run; see ``docs/scale.md``.
    """
    return asyncio.run(
        arun_eval(
            samples,
            agent=agent,
            show_progress=show_progress,
            checkpoint=checkpoint,
            max_concurrency=max_concurrency,
            memory_timeout=memory_timeout,
            memory_factory=memory_factory,
            identity=identity,
            executor=executor,
        )
    )

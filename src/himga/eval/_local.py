"""The local executor: ingest each sample once, retrieve per question, answer concurrently."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from himga._redact import redact
from himga.agent._agent import BaseAgent
from himga.data.schema import QAPair, Sample
from himga.eval._identity import run_identity
from himga.eval._ledger import Ledger, new_result, turn_count
from himga.eval._memory_calls import CallThread, GuardedMemory, MemoryCallFailed
from himga.eval._options import EvalOptions, PhaseMeter
from himga.eval._oracle import Arm, oracle_context
from himga.eval._progress import ProgressBar
from himga.llm._protocol import ChatMessage
from himga.memory._protocol import SearchableMemory, reports_embedding
from himga.scoring._result import EvalResult, MemoryCallError

__all__ = ["evaluate_here"]


class _Unmetered:
    """The meter of a run that counts nothing: every window is empty."""

    def phase(self, name: str, /) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


_UNMETERED = _Unmetered()


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
    neutral_id = hashlib.sha256(sample.sample_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
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
        message=redact(failure.message),
        raised_at=None if failure.raised_at is None else redact(failure.raised_at),
        traceback=None if failure.traceback is None else redact(failure.traceback),
    )
    return new_result(sample, texts, qa, context="", ranked=None, latency=0.0, memory_error=error)


def _prepare(
    agent: BaseAgent,
    guarded: GuardedMemory,
    search_k: int | None,
    arm: Arm,
    sample: Sample,
    pending: Sequence[QAPair],
    prompts: bool,
    meter: PhaseMeter,
    progress: ProgressBar,
    record: Callable[[EvalResult], None],
) -> list[tuple[EvalResult, list[ChatMessage]]]:
    """Runs on the memory thread: reset, ingest once, retrieve (and search) per question.

    ``agent`` calls the memory through ``guarded``: a failed reset or ingest
    fails every pending question of the sample, a failed retrieve or search
    only its own. A searchable memory is searched ``search_k`` deep (``None``: not).
    With ``prompts`` each question's prompt is built here too,
    while the agent still holds this sample's state, and the results to answer are
    returned with their prompts; every other result (no LLM, a memory error) is given
    to ``record`` the moment it is known, so a ``kill -9`` loses at most the question
    in hand. Reset and ingest run in ``meter``'s ``"ingest"`` window, each question's
    retrieve and search in its ``"retrieval"`` window. ``progress`` is told when the
    ingest starts and ends and when the sample's questions are retrieved (``guarded``
    counts each turn and embedded passage on it). Under the ``"oracle"``
    ``arm`` a question's context is its gold evidence turns and the memory is not asked.
    """
    conversation, sample_turn_id = _conversation_only(sample)
    texts = {message.turn_id: message.content for _, message in sample.iter_turns()}
    try:
        with meter.phase("ingest"):
            progress.ingest_starts(turn_count(sample))
            guarded.reset()
            agent.ingest_sample(conversation)
    except MemoryCallFailed as failure:
        for qa in pending:
            record(_failed(sample, texts, qa, failure))
        progress.sample_ends()
        return []
    finally:
        progress.ingest_ends()
    try:
        return _retrieve_each(
            agent,
            guarded,
            search_k,
            arm,
            (sample, sample_turn_id, texts),
            pending,
            prompts,
            meter,
            record,
        )
    finally:
        progress.sample_ends()


def _retrieve_each(
    agent: BaseAgent,
    guarded: GuardedMemory,
    search_k: int | None,
    arm: Arm,
    held: tuple[Sample, dict[str, str], dict[str | None, str]],
    pending: Sequence[QAPair],
    prompts: bool,
    meter: PhaseMeter,
    record: Callable[[EvalResult], None],
) -> list[tuple[EvalResult, list[ChatMessage]]]:
    """:func:`_prepare`'s retrieval (and search), question by question, once ingested:
    ``held`` is the sample, the map from the agent's turn ids back to its, and its texts."""
    sample, sample_turn_id, texts = held
    prepared: list[tuple[EvalResult, list[ChatMessage]]] = []
    for qa in pending:
        started = time.perf_counter()
        try:
            with meter.phase("retrieval"):
                ranked = None
                if arm == "oracle":
                    context = oracle_context(sample, qa)
                else:
                    context = agent.retrieve(qa.question)
                if search_k is not None and arm == "memory":
                    # A hit naming no ingested turn cannot be evidence: None.
                    hits = guarded.search_turn_ids(qa.question, search_k)
                    ranked = tuple(sample_turn_id.get(turn_id or "") for turn_id in hits)
        except MemoryCallFailed as failure:
            record(_failed(sample, texts, qa, failure))
            continue
        result = new_result(
            sample, texts, qa, context=context, ranked=ranked, latency=time.perf_counter() - started
        )
        if prompts:
            prepared.append((result, agent.build_prompt(qa.question, context)))
        else:
            record(result)
    return prepared


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
                error=redact(f"{type(exc).__name__}: {exc}"),
                latency_s=time.perf_counter() - started,
            )
    return dataclasses.replace(
        result,
        prediction=redact(answer.text),
        latency_s=answer.latency_s,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        model=answer.model,
    )


async def evaluate_here(
    samples: Iterable[Sample], agent: BaseAgent, options: EvalOptions
) -> list[EvalResult]:
    """Evaluate ``agent`` on ``samples`` in this process (``run_eval``'s contract)."""
    llm = agent.llm
    if options.max_concurrency is not None:
        limit = options.max_concurrency
    else:
        limit = llm.max_concurrency if llm is not None else 1
    if limit < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {limit}")
    slots = asyncio.Semaphore(limit)
    identity = options.identity or run_identity(agent, search_k=options.search_k)
    known = isinstance(samples, Sequence)
    # Passages are work only where the memory is asked (the oracle arm never queries it).
    embeds = options.arm == "memory" and reports_embedding(agent.memory)
    ledger = Ledger(
        options.checkpoint,
        identity,
        turns=sum(turn_count(sample) for sample in samples) if known else None,
        questions=sum(len(sample.qa_pairs) for sample in samples) if known else None,
        show_progress=options.show_progress,
        embeds=embeds,
        observer=options.progress_observer,
    )
    guarded = GuardedMemory(
        agent.memory,
        options.memory_timeout,
        options.memory_factory,
        on_ingest=ledger.progress.ingested,
        on_embedded=ledger.progress.embedded if embeds else None,
    )
    search_k = options.search_k if isinstance(agent.memory, SearchableMemory) else None
    guarded_agent = agent.with_memory(guarded)
    tasks: list[asyncio.Task[None]] = []

    async def answer_and_record(result: EvalResult, prompt: list[ChatMessage]) -> None:
        ledger.record(await _answer(agent, result, prompt, slots))

    # One dedicated thread owns the memory (ingest, retrieve, search, reset), so
    # in-flight LLM calls progress while the next sample is ingested, and memories
    # that are not thread-safe are still only ever touched from one thread. A daemon
    # thread, never joined: a memory call that hangs there (no deadline, or a long one)
    # cannot keep Ctrl-C from ending the run.
    memory_thread = CallThread()
    try:
        for sample in samples:
            pending = ledger.plan(sample)
            if not pending:
                continue
            prepared = await asyncio.wrap_future(
                memory_thread.submit(
                    _prepare,
                    guarded_agent,
                    guarded,
                    search_k,
                    options.arm,
                    sample,
                    pending,
                    llm is not None,
                    options.memory_meter or _UNMETERED,
                    ledger.progress,
                    ledger.record,
                )
            )
            for result, prompt in prepared:
                tasks.append(asyncio.ensure_future(answer_and_record(result, prompt)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        memory_thread.close()
        guarded.close()
        ledger.close()
    return ledger.results()

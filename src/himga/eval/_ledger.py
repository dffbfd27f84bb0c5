"""The bookkeeping of one run, shared by every executor: question order, resume, record."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from himga._errors import HimgaError
from himga._redact import redact
from himga.data.schema import QAPair, Sample
from himga.eval._checkpoint import Checkpoint, CheckpointMismatchError
from himga.eval._identity import RunIdentity
from himga.eval._progress import ProgressBar, ProgressModel, ProgressObserver
from himga.scoring._result import EvalResult, MemoryCallError

__all__ = ["DuplicateQuestionError", "Ledger", "failed_result", "new_result", "turn_count"]


class DuplicateQuestionError(HimgaError, ValueError):
    """Two questions of the evaluated samples share ``(sample_id, question_id)``."""


def new_result(
    sample: Sample,
    texts: Mapping[str | None, str],
    qa: QAPair,
    *,
    context: str,
    ranked: tuple[str | None, ...] | None,
    latency: float,
    memory_error: MemoryCallError | None = None,
) -> EvalResult:
    """The result of ``qa`` as retrieved, before any answer; ``texts`` maps turn ids to text."""
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
        gold=qa.gold,
    )


def turn_count(sample: Sample) -> int:
    """The messages of ``sample``: the turns its ingest takes."""
    return sum(len(session.messages) for session in sample.sessions)


#: The ``method`` of the memory error recorded when the worker evaluating a sample failed.
WORKER = "worker"


def failed_result(sample: Sample, qa: QAPair, reason: str) -> EvalResult:
    """A result recording that ``qa`` could not be evaluated because the worker that held
    its sample failed (``reason``, redacted): a memory error of method :data:`WORKER`,
    type ``WorkerError``, since what runs there besides the memory is the LLM client,
    whose failures are recorded per call as LLM errors. A resumed run retries it."""
    texts = {message.turn_id: message.content for _, message in sample.iter_turns()}
    error = MemoryCallError(sample.sample_id, qa.question_id, WORKER, "WorkerError", redact(reason))
    return new_result(sample, texts, qa, context="", ranked=None, latency=0.0, memory_error=error)


class Ledger:
    """Which questions a run has, which are finished, and the durable record of each.

    Opened on a ``checkpoint`` file (or none), it holds the results finished
    before (errors of either kind are not: a resumed run retries them).
    :meth:`plan` takes each sample in order and returns its questions still to
    do; :meth:`record` keeps the first result per question (an executor that
    retries may deliver one twice) and appends it to the checkpoint;
    :meth:`results` lists them in question order. :meth:`record` may be called from
    any thread (the memory thread records what needs no answer the moment it is
    retrieved, the event loop the answers). ``progress`` is the run's bar, over
    ``turns`` to ingest and ``questions`` (totals; ``None``: unknown) with
    ``parallelism`` workers, and one passage to embed per turn when ``embeds`` (the
    memory reports its embedding): the ledger counts finished and resumed questions,
    the executor the turns it ingests and the passages embedded; each is also told to
    ``observer`` (a Ray worker's reporter).
    """

    def __init__(
        self,
        checkpoint: str | os.PathLike[str] | None,
        identity: RunIdentity,
        *,
        turns: int | None,
        questions: int | None,
        show_progress: bool,
        description: str = "eval",
        parallelism: int = 1,
        embeds: bool = False,
        observer: ProgressObserver | None = None,
    ) -> None:
        self._store = None if checkpoint is None else Checkpoint(checkpoint, identity.to_dict())
        self._finished: dict[tuple[str, str], EvalResult] = {}
        if self._store is not None:
            done = self._store.open()
            self._finished = {
                key: r for key, r in done.items() if r.error is None and r.memory_error is None
            }
        self._lock = threading.Lock()
        self._order: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()
        model = ProgressModel(
            turns=turns,
            questions=questions,
            embeds=turns if embeds else 0,
            parallelism=parallelism,
        )
        self.progress = ProgressBar(
            model, enabled=show_progress, description=description, observer=observer
        )

    def plan(self, sample: Sample) -> list[QAPair]:
        """The questions of ``sample`` not finished yet, in order.

        :class:`DuplicateQuestionError` when a question repeats a key seen before;
        :class:`~himga.eval.CheckpointMismatchError` when a finished result was
        recorded for another question, answer, category or evidence (another
        dataset version).
        """
        pending = []
        resumed = 0
        for qa in sample.qa_pairs:
            key = (sample.sample_id, qa.question_id)
            if key in self._seen:
                raise DuplicateQuestionError(
                    f"sample {sample.sample_id!r}: question id {qa.question_id!r} repeats"
                )
            self._seen.add(key)
            self._order.append(key)
            stored = self._finished.get(key)
            if stored is None:
                pending.append(qa)
                continue
            self._check_resumed(stored, qa)
            resumed += 1
        # A sample with nothing pending is not ingested again: its turns are not work.
        self.progress.skip(turns=0 if pending else turn_count(sample), questions=resumed)
        return pending

    def _check_resumed(self, stored: EvalResult, qa: QAPair) -> None:
        recorded = (stored.question, stored.answer, stored.category, stored.evidence_turns)
        loaded = (qa.question, qa.answer, qa.category, tuple(qa.evidence_turns))
        if self._store is not None and recorded != loaded:
            raise CheckpointMismatchError(
                f"{self._store.path}: sample {stored.sample_id!r} question {stored.question_id!r} "
                "was recorded with another question, answer, category or evidence (another "
                "dataset version?); use another checkpoint file"
            )

    def record(self, result: EvalResult, *, counted: bool = True) -> None:
        """Keep ``result`` (unless its question has one already) and record it durably;
        ``counted=False``: its question is already on the progress bar (a Ray worker
        reported it finished)."""
        with self._lock:
            if result.key in self._finished:
                return
            if self._store is not None:
                self._store.append(result)
            self._finished[result.key] = result
            if counted:
                self.progress.finished()

    def fail(
        self, sample: Sample, pending: Sequence[QAPair], reason: str, *, counted: int = 0
    ) -> None:
        """Record each of ``pending`` as lost with its worker (:func:`failed_result`);
        the first ``counted`` are already on the progress bar."""
        for number, qa in enumerate(pending):
            self.record(failed_result(sample, qa, reason), counted=number >= counted)

    def results(self) -> list[EvalResult]:
        """One result per planned question, in plan order."""
        return [self._finished[key] for key in self._order]

    def close(self) -> None:
        """Close the progress bar and the checkpoint (idempotent)."""
        self.progress.close()
        if self._store is not None:
            self._store.close()

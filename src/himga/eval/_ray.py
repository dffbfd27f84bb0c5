"""The Ray executor: one actor per worker builds the agent from a spec; the driver keeps the run."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from himga._errors import HimgaError
from himga._extras import require
from himga.data.schema import QAPair, Sample
from himga.eval._identity import RunIdentity
from himga.eval._ledger import Ledger, turn_count
from himga.eval._local import evaluate_here
from himga.eval._options import EvalOptions
from himga.eval._spec import AgentSpec
from himga.memory._protocol import reports_embedding
from himga.metering import ProxyCall, RunMeter
from himga.scoring._result import EvalResult

__all__ = ["RayClusterError", "RayExecutor", "RunStopped", "WorkerStartError"]

#: Samples in flight per actor: one running, one queued behind it, so an actor
#: never waits for the driver and a lost actor costs at most two samples' work.
SAMPLES_IN_FLIGHT = 2
#: Seconds each wait on Ray lasts at most: Ray's waits block in C++, where Python
#: cannot deliver Ctrl-C, so the driver waits in slices this long.
_WAIT_SLICE_S = 0.2
#: Seconds between two progress reports of a worker, and two reads of them by the driver.
_REPORT_S = 0.5
#: Seconds to reach a cluster's address before ``ray.init``, which retries for ever.
_CONNECT_TIMEOUT_S = 10.0


class RunStopped(HimgaError, RuntimeError):
    """The run was told to stop (its caller was interrupted): what it finished is in
    the checkpoint, its actors are killed."""


def _check_stop(stop: threading.Event) -> None:
    if stop.is_set():
        raise RunStopped("the Ray run was stopped (its caller was interrupted)")


class RayClusterError(HimgaError, RuntimeError):
    """The Ray cluster cannot run the evaluation as asked: its address does not answer,
    or it has fewer CPUs, GPUs or custom resources than the workers reserve."""


class WorkerStartError(HimgaError, RuntimeError):
    """A Ray worker could not build the agent, or built one whose run identity differs
    from the run's (the message names the differing fields): its results would not
    belong to this run, so the run does not start."""


@dataclass(frozen=True)
class _Counts:
    """Work a worker did on one sample: turns ingested and their seconds, passages
    embedded and theirs, questions finished."""

    turns: int = 0
    ingest_s: float = 0.0
    embeds: int = 0
    embed_s: float = 0.0
    questions: int = 0

    def __add__(self, other: _Counts) -> _Counts:
        return _Counts(
            self.turns + other.turns,
            self.ingest_s + other.ingest_s,
            self.embeds + other.embeds,
            self.embed_s + other.embed_s,
            self.questions + other.questions,
        )


class _ProgressBoard:
    """The body of the run's one progress actor: what the workers report of the samples
    they hold, kept until the driver takes it (every :data:`_REPORT_S` or so)."""

    def __init__(self) -> None:
        self._reports: list[tuple[str, _Counts]] = []

    def add(self, sample_id: str, counts: _Counts) -> None:
        self._reports.append((sample_id, counts))

    def take(self) -> list[tuple[str, _Counts]]:
        reports, self._reports = self._reports, []
        return reports


class _Reporter:
    """A worker's :class:`~himga.eval._progress.ProgressObserver` for one sample: sums
    the work as it is done, and sends what is new to ``send`` at most every
    :data:`_REPORT_S` (``total``: all of it, returned with the sample's results).
    Thread-safe: the memory thread ingests, the event loop finishes questions."""

    def __init__(self, send: Callable[[_Counts], None] | None) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._timer: threading.Timer | None = None
        self.total = _Counts()
        self._unsent = _Counts()

    def ingested(self, turns: int, seconds: float, /) -> None:
        self._add(_Counts(turns=turns, ingest_s=seconds))

    def embedded(self, passages: int, seconds: float, /) -> None:
        self._add(_Counts(embeds=passages, embed_s=seconds))

    def finished(self, questions: int, /) -> None:
        self._add(_Counts(questions=questions))

    def _add(self, counts: _Counts) -> None:
        with self._lock:
            self.total += counts
            self._unsent += counts
            if self._send is None or self._timer is not None:
                return
            # Sent when due, even if nothing follows (a long retrieve after the ingest).
            wait = max(self._last + _REPORT_S - time.monotonic(), 0.0)
            self._timer = threading.Timer(wait, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        """Send what is not sent yet."""
        with self._lock:
            self._timer, self._last = None, time.monotonic()
            unsent, self._unsent = self._unsent, _Counts()
        if self._send is not None and unsent != _Counts():
            self._send(unsent)

    def close(self) -> None:
        """Send nothing more (the rest goes back with the sample's results)."""
        with self._lock:
            timer, self._timer, self._send = self._timer, None, None
        if timer is not None:
            timer.cancel()


class _Worker:
    """The body of one actor: the agent, built once from the spec, evaluates samples.

    ``metered``: every model call of the agent goes through a meter of this actor's
    own (:meth:`~himga.eval.AgentSpec.assemble`), in the phase windows of the local
    loop, and is returned with the results of the sample it was made for. ``board``:
    the run's progress actor (:class:`_ProgressBoard`), told the turns, passages and
    questions of the sample in hand as they are done.
    """

    def __init__(
        self,
        spec: AgentSpec,
        context: Mapping[str, Any],
        max_concurrency: int | None,
        memory_timeout: float | None,
        metered: bool = False,
        board: Any = None,
    ) -> None:
        self._lock = threading.Lock()
        self._calls: list[ProxyCall] = []
        # Closed with the actor's process: its proxies serve on daemon threads.
        self._meter = RunMeter(self._collect) if metered else None
        self._agent, create_memory = spec.assemble(self._meter)
        self._board = board
        # The run's question subset and arm are not the agent's: they travel beside it.
        asked = dict(context)
        questions, arm = asked.pop("questions", None), asked.pop("arm", "memory")
        identity = replace(spec.run_identity(self._agent, **asked), questions=questions, arm=arm)
        self._options = EvalOptions(
            show_progress=False,
            max_concurrency=max_concurrency,
            memory_timeout=memory_timeout,
            memory_factory=create_memory,
            identity=identity,
            search_k=identity.search_k,
            memory_meter=self._meter,
            arm=arm,
        )

    def _collect(self, call: ProxyCall) -> None:
        with self._lock:
            self._calls.append(call)

    def identity(self) -> dict[str, Any]:
        """The run identity of the agent this actor built."""
        assert self._options.identity is not None
        return self._options.identity.to_dict()

    def embeds(self) -> bool:
        """Whether the memory reports the passages it embeds (one per turn)."""
        return self._options.arm == "memory" and reports_embedding(self._agent.memory)

    def evaluate(
        self, sample: Sample
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], _Counts]:
        """Every pending question of one sample, evaluated as the local executor does, the
        model calls metered since the last sample returned (none unless ``metered``) and
        the work done on it (what was reported to the board, and the rest).

        Ray runs an actor's tasks one at a time, so those are this sample's -- and
        any of a memory call that timed out before and still runs.
        """
        board = self._board
        reporter = _Reporter(
            None if board is None else lambda counts: board.add.remote(sample.sample_id, counts)
        )
        options = replace(self._options, progress_observer=reporter)
        answering = (
            contextlib.nullcontext()
            if self._meter is None
            else self._meter.answer_phase("answering")
        )
        with answering:
            try:
                results = asyncio.run(evaluate_here([sample], self._agent, options))
            finally:
                reporter.close()
        if self._meter is not None:
            self._meter.settle()  # this sample's last calls are collected, not the next's
        with self._lock:
            calls, self._calls = self._calls, []
        calls_json = [call.to_json() for call in calls]
        return [result.to_dict() for result in results], calls_json, reporter.total


def _ray() -> Any:
    return require("ray", extra="ray", purpose="the Ray executor (RayExecutor, himga eval --ray)")


@dataclass(frozen=True)
class RayExecutor:
    """Run an evaluation on a Ray cluster: ``run_eval(samples, agent=spec, executor=...)``.

    ``address`` is passed to :func:`ray.init` (``"auto"``: the cluster this
    machine belongs to; ``None``: a new local one), and Ray is shut down after
    the run, unless Ray is already initialised in this process, whose cluster
    is then used and left connected. ``num_workers``
    actors are started, each reserving ``worker_resources`` (``"CPU"``,
    ``"GPU"`` and custom resources; default one CPU), and each builds the agent
    from the :class:`~himga.eval.AgentSpec` once -- reading API keys from its
    own environment -- and reports its run identity; the run is refused
    (:class:`WorkerStartError`) unless every worker's equals the run's.

    The unit of work is one sample with its pending questions, at most
    :data:`SAMPLES_IN_FLIGHT` per actor. An actor that dies is restarted up
    to ``max_restarts`` times, and the samples it held are retried up to
    ``max_task_retries`` times (delivery is at least once: a retried sample's
    LLM calls may be made twice); the driver keeps the first result per
    question. A sample that still fails is recorded on each of its questions
    as a memory error of method ``"worker"``, type ``WorkerError`` (the memory
    is what crashes a worker; retried by a resumed run), never dropped. Only the driver
    writes the checkpoint, in the local format.

    ``llm_concurrency_total`` caps LLM calls in flight over all workers
    together (each gets ``llm_concurrency_total // num_workers``); without it
    each worker uses its client's ``max_concurrency``, so the cluster makes up
    to ``num_workers`` times as many calls at once.

    With ``on_call`` each worker meters every model call of its agent as
    ``himga eval`` meters a local run (:meth:`~himga.eval.AgentSpec.assemble`:
    the memory's own endpoint and client, and the answering client, through
    loopback recording proxies of the worker's own; the windows ``ingest``,
    ``retrieval`` and ``answering`` of the local loop), holds the calls in memory
    and returns them with each sample's results; the driver passes each to
    ``on_call`` (``himga eval`` appends them to ``calls.jsonl``) before it records
    the results. A call counts only once its worker returns: the calls of an
    attempt lost with its actor (a sample retried after the actor died, or
    failed for good) are not counted, although they were made and paid for.

    Nothing waits for ever: an ``address`` (``host:port``, or ``ray://host:port``)
    that does not accept a connection within 10 s, and workers reserving more of
    a resource than the cluster has in total (``num_workers`` times
    ``worker_resources``; an autoscaling cluster must be scaled up first), raise
    :class:`RayClusterError` before any actor starts; workers not all started --
    placed, and their agent built -- within ``start_timeout`` seconds (the
    resources exist but others hold them) raise :class:`WorkerStartError`. Ctrl-C
    stops the run while samples are in flight (the driver waits on Ray in short
    slices), and the actors are killed.
    """

    address: str | None = "auto"
    num_workers: int = 2
    worker_resources: Mapping[str, float] = field(default_factory=lambda: {"CPU": 1})
    llm_concurrency_total: int | None = None
    max_restarts: int = 3
    max_task_retries: int = 3
    on_call: Callable[[ProxyCall], None] | None = None
    start_timeout: float = 300.0

    def __post_init__(self) -> None:
        if not 0 < self.start_timeout < float("inf"):
            raise ValueError(f"start_timeout must be > 0 seconds, got {self.start_timeout}")
        if self.num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {self.num_workers}")
        if self.max_restarts < 0 or self.max_task_retries < 0:
            raise ValueError(
                "max_restarts and max_task_retries must be >= 0 (bounded), got "
                f"{self.max_restarts} and {self.max_task_retries}"
            )
        if self.llm_concurrency_total is not None and self.llm_concurrency_total < self.num_workers:
            raise ValueError(
                f"llm_concurrency_total={self.llm_concurrency_total} leaves a worker without "
                f"an LLM call: it must be >= num_workers ({self.num_workers})"
            )
        if any(value < 0 for value in self.worker_resources.values()):
            raise ValueError(f"worker_resources must be >= 0, got {dict(self.worker_resources)}")

    def _demand(self) -> dict[str, float]:
        """What one actor reserves, by Ray resource name (zero amounts left out)."""
        return {name: amount for name, amount in self.worker_resources.items() if amount}

    def _check_resources(self, ray: Any) -> None:
        """:class:`RayClusterError` when the workers together reserve more of a resource
        than the whole cluster has: Ray would keep them pending for ever."""
        total = ray.cluster_resources()
        short = [
            f"{self.num_workers} x {name}={amount:g} needs {self.num_workers * amount:g}, "
            f"it has {total.get(name, 0):g}"
            for name, amount in self._demand().items()
            if self.num_workers * amount > total.get(name, 0)
        ]
        if short:
            raise RayClusterError(
                f"the Ray cluster cannot start {self.num_workers} worker(s): "
                f"{'; '.join(short)} (ask for fewer --workers or less --worker-resource)"
            )

    def _actor_options(self) -> dict[str, Any]:
        resources = dict(self.worker_resources)
        options: dict[str, Any] = {
            "num_cpus": resources.pop("CPU", 0),
            "num_gpus": resources.pop("GPU", 0),
            "max_restarts": self.max_restarts,
            "max_task_retries": self.max_task_retries,
        }
        if resources:
            options["resources"] = resources
        return options

    def run(
        self,
        samples: Iterable[Sample],
        spec: AgentSpec,
        options: EvalOptions,
        stop: threading.Event | None = None,
    ) -> list[EvalResult]:
        """What :func:`~himga.eval.run_eval` returns for ``spec`` run here with ``options``,
        computed on Ray (``options.max_concurrency`` and ``memory_factory`` do not apply:
        :attr:`llm_concurrency_total` and the spec's memory do).

        ``options.identity`` (default: the workers' common one) keys the checkpoint;
        the judge, dataset and search depth it names are passed to the workers, whose
        identities must equal it. Once ``stop`` is set the run raises
        :class:`RunStopped` within a wait slice, its actors killed.
        """
        ray = _ray()
        connected_here = not ray.is_initialized()
        if connected_here:
            _check_reachable(self.address)
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        try:
            return self._evaluate(ray, list(samples), spec, options, stop or threading.Event())
        finally:
            if connected_here:
                ray.shutdown()

    def _evaluate(
        self,
        ray: Any,
        samples: list[Sample],
        spec: AgentSpec,
        options: EvalOptions,
        stop: threading.Event,
    ) -> list[EvalResult]:
        identity = options.identity
        context: dict[str, Any] = {"search_k": options.search_k, "arm": options.arm}
        if identity is not None:
            context.update(
                judge=identity.judge,
                dataset=identity.dataset,
                dataset_sha256=identity.dataset_sha256,
                questions=identity.questions,
            )
        per_worker = None
        if self.llm_concurrency_total is not None:
            per_worker = self.llm_concurrency_total // self.num_workers
        self._check_resources(ray)
        # Holds the workers' progress reports; no CPU of its own, so it needs no slot.
        board = ray.remote(_ProgressBoard).options(num_cpus=0).remote()
        actor_class = ray.remote(_Worker).options(**self._actor_options())
        actors = [
            actor_class.remote(
                spec, context, per_worker, options.memory_timeout, self.on_call is not None, board
            )
            for _ in range(self.num_workers)
        ]
        try:
            expected = self._common_identity(ray, actors, identity, stop)
            ledger = Ledger(
                options.checkpoint,
                expected,
                turns=sum(turn_count(sample) for sample in samples),
                questions=sum(len(sample.qa_pairs) for sample in samples),
                show_progress=options.show_progress,
                description="eval (ray)",
                parallelism=self.num_workers,
                embeds=ray.get(actors[0].embeds.remote()),
            )
            try:
                work: deque[tuple[Sample, list[QAPair]]] = deque()
                for sample in samples:
                    pending = ledger.plan(sample)
                    if pending:
                        work.append((sample, pending))
                self._schedule(ray, actors, work, _Tally(ray, board, ledger), stop)
            finally:
                ledger.close()
            return ledger.results()
        finally:
            for actor in [*actors, board]:
                ray.kill(actor, no_restart=True)

    def _common_identity(
        self, ray: Any, actors: list[Any], identity: RunIdentity | None, stop: threading.Event
    ) -> RunIdentity:
        """The run's identity (default: the first worker's); :class:`WorkerStartError`
        unless every worker built an agent of it."""
        asked = [actor.identity.remote() for actor in actors]
        deadline = time.monotonic() + self.start_timeout
        waiting = list(asked)
        while waiting:
            _check_stop(stop)
            left = deadline - time.monotonic()
            if left <= 0:
                late = ", ".join(str(asked.index(ref)) for ref in waiting)
                demand, free = self._demand(), ray.available_resources()
                raise WorkerStartError(
                    f"Ray worker(s) {late} did not start (be placed and build the agent) "
                    f"within {self.start_timeout:g} s: "
                    f"each reserves {_shown(demand)} and the cluster has "
                    f"{_shown({name: free.get(name, 0) for name in demand})} free; free "
                    f"some, ask for fewer workers, or scale the cluster up"
                )
            _, waiting = ray.wait(
                waiting, num_returns=len(waiting), timeout=min(left, _WAIT_SLICE_S)
            )
        reported = []
        for number, ref in enumerate(asked):
            try:
                reported.append(RunIdentity.from_dict(ray.get(ref)))
            except ray.exceptions.RayError as exc:
                raise WorkerStartError(
                    f"Ray worker {number} could not build the agent from the spec: {exc}"
                ) from exc
        expected = identity or reported[0]
        for number, found in enumerate(reported):
            if found.fingerprint != expected.fingerprint:
                raise WorkerStartError(
                    f"Ray worker {number} built another agent than the run's, so its results "
                    f"would not belong to this run; differs in "
                    f"{'; '.join(expected.differences(found))} (run != worker)"
                )
        return expected

    def _schedule(
        self,
        ray: Any,
        actors: list[Any],
        work: deque[tuple[Sample, list[QAPair]]],
        tally: _Tally,
        stop: threading.Event,
    ) -> None:
        ledger = tally.ledger
        live = list(range(len(actors)))
        load = dict.fromkeys(live, 0)
        in_flight: dict[Any, tuple[int, Sample, list[QAPair]]] = {}
        while work or in_flight:
            for number in live:
                while work and load[number] < SAMPLES_IN_FLIGHT:
                    sample, pending = work.popleft()
                    # Only the pending questions travel; the metadata never reaches the agent.
                    shipped = replace(sample, qa_pairs=tuple(pending), metadata={})
                    ref = actors[number].evaluate.remote(shipped)
                    in_flight[ref] = (number, sample, pending)
                    tally.starts(sample, pending)
                    load[number] += 1
            if not in_flight:
                # Every actor is gone for good: what is left fails, recorded.
                while work:
                    sample, pending = work.popleft()
                    tally.starts(sample, pending)
                    tally.fails(sample, pending, "no Ray worker is left alive")
                break
            _check_stop(stop)
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=_WAIT_SLICE_S)
            tally.poll()
            for ref in ready:
                number, sample, pending = in_flight.pop(ref)
                load[number] -= 1
                try:
                    data, calls, done = ray.get(ref)
                    returned = [EvalResult.from_dict(result) for result in data]
                except ray.exceptions.RayActorError as exc:
                    if number in live and isinstance(exc, ray.exceptions.ActorDiedError):
                        live.remove(number)
                    tally.fails(sample, pending, _after_retries(self, exc))
                    continue
                except ray.exceptions.RayError as exc:
                    tally.fails(sample, pending, _after_retries(self, exc))
                    continue
                if self.on_call is not None:
                    # Before the results, as locally a call is logged when made: a driver
                    # stopped in between reruns the sample, counting its calls again.
                    for call in calls:
                        self.on_call(ProxyCall.from_json(call))
                uncounted = tally.returns(sample, done)
                asked = {qa.question_id for qa in pending}
                for result in returned:
                    if result.sample_id == sample.sample_id and result.question_id in asked:
                        ledger.record(result, counted=uncounted <= 0)
                        uncounted -= 1
                        asked.discard(result.question_id)
                missing = [qa for qa in pending if qa.question_id in asked]
                ledger.fail(
                    sample, missing, "the worker returned no result for it", counted=uncounted
                )


class _Tally:
    """The driver's side of the progress: the workers' reports of the samples in flight
    put on ``ledger``'s bar as they arrive (read from ``board`` at most every
    :data:`_REPORT_S`, without blocking), and, when a sample returns or fails, the rest
    of its work -- so each turn, passage and question counts once, however late a
    report arrives or however often Ray retried the sample."""

    def __init__(self, ray: Any, board: Any, ledger: Ledger) -> None:
        self._ray = ray
        self._board = board
        self.ledger = ledger
        self._asked: Any = None  # the board's answer awaited, if any
        self._last = time.monotonic()
        #: Per sample in flight: its turns, its passages (0 for a run that embeds
        #: nothing), its questions, and what is on the bar of each so far.
        self._open: dict[str, tuple[Sample, int, _Counts]] = {}

    def starts(self, sample: Sample, pending: list[QAPair]) -> None:
        self._open[sample.sample_id] = (sample, len(pending), _Counts())

    def poll(self) -> None:
        """Put the reports that arrived on the bar; ask for the next at most every
        :data:`_REPORT_S`."""
        ray = self._ray
        if self._asked is not None:
            ready, _ = ray.wait([self._asked], timeout=0)
            if not ready:
                return
            try:
                reports: list[tuple[str, _Counts]] = ray.get(self._asked)
            except ray.exceptions.RayError:
                reports = []  # the board is gone: samples still count when they return
            self._asked = None
            for sample_id, counts in reports:
                if sample_id in self._open:
                    self._credit(sample_id, counts)
        if time.monotonic() - self._last >= _REPORT_S:
            self._last = time.monotonic()
            self._asked = self._board.take.remote()

    def _credit(self, sample_id: str, counts: _Counts) -> None:
        """Count ``counts`` of the sample on the bar, up to its work."""
        sample, questions, credited = self._open[sample_id]
        turns = turn_count(sample)
        progress = self.ledger.progress
        add_turns = min(counts.turns, turns - credited.turns)
        if add_turns or counts.ingest_s:
            progress.ingested(add_turns, seconds=counts.ingest_s)
        add_embeds = min(counts.embeds, turns - credited.embeds)
        if add_embeds or counts.embed_s:
            progress.embedded(add_embeds, counts.embed_s)
        add_questions = min(counts.questions, questions - credited.questions)
        if add_questions:
            progress.finished(add_questions)
        added = _Counts(add_turns, counts.ingest_s, add_embeds, counts.embed_s, add_questions)
        self._open[sample_id] = (sample, questions, credited + added)

    def returns(self, sample: Sample, done: _Counts) -> int:
        """The sample returned, having done ``done`` in all: count what its reports did
        not, take what it did not do off the totals; the questions already counted."""
        _, _, credited = self._open[sample.sample_id]
        rest = _Counts(
            max(done.turns - credited.turns, 0),
            max(done.ingest_s - credited.ingest_s, 0.0),
            max(done.embeds - credited.embeds, 0),
            max(done.embed_s - credited.embed_s, 0.0),
            0,  # recorded by the ledger as each result is
        )
        self._credit(sample.sample_id, rest)
        _, _, credited = self._open.pop(sample.sample_id)
        turns = turn_count(sample)
        self.ledger.progress.skip(
            turns=turns - credited.turns, embeds=max(turns - credited.embeds, 0)
        )
        return credited.questions

    def fails(self, sample: Sample, pending: list[QAPair], reason: str) -> None:
        """The sample failed for good: what was not done is no longer work, and each of
        its questions is recorded failed (those already counted not again)."""
        _, _, credited = self._open.pop(sample.sample_id)
        turns = turn_count(sample)
        self.ledger.progress.skip(
            turns=turns - credited.turns, embeds=max(turns - credited.embeds, 0)
        )
        self.ledger.fail(sample, pending, reason, counted=credited.questions)


def _shown(resources: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={amount:g}" for name, amount in sorted(resources.items())) or "none"


def _check_reachable(address: str | None) -> None:
    """:class:`RayClusterError` unless ``address`` (``host:port``, ``ray://host:port``)
    accepts a TCP connection within :data:`_CONNECT_TIMEOUT_S`: ``ray.init`` retries an
    address that does not answer for ever. ``None`` and ``"auto"`` / ``"local"`` (Ray
    finds or starts the cluster itself, and says so when it cannot) are not probed."""
    if address is None or address in ("auto", "local"):
        return
    location = address.removeprefix("ray://")
    host, colon, port = location.rpartition(":")
    if not colon or not port.isdigit():
        raise RayClusterError(
            f"Ray address {address!r}: expected HOST:PORT, ray://HOST:PORT or 'auto'"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise RayClusterError(
            f"cannot reach the Ray cluster at {address!r}: {reason} (is `ray start --head` "
            f"running there, and is the port the GCS's, 6379 by default?)"
        ) from exc


def _after_retries(executor: RayExecutor, exc: Exception) -> str:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (
        f"the Ray worker died or failed (after up to {executor.max_restarts} restarts and "
        f"{executor.max_task_retries} retries): {type(exc).__name__}: {first_line}"
    )

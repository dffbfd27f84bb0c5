"""The Ray executor: one actor per worker builds the agent from a spec; the driver keeps the run."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from himga._errors import HimgaError
from himga._extras import require
from himga.data.schema import QAPair, Sample
from himga.eval._identity import RunIdentity
from himga.eval._ledger import Ledger, turn_count
from himga.eval._local import evaluate_here
from himga.eval._options import EvalOptions, PhaseMeter
from himga.eval._spec import AgentSpec
from himga.metering import ProxyCall, RunMeter
from himga.scoring._result import EvalResult

__all__ = ["RayClusterError", "RayExecutor", "RunStopped", "WorkerStartError"]

#: Samples in flight per actor: one running, one queued behind it, so an actor
#: never waits for the driver and a lost actor costs at most two samples' work.
SAMPLES_IN_FLIGHT = 2
#: Seconds each wait on Ray lasts at most: Ray's waits block in C++, where Python
#: cannot deliver Ctrl-C, so the driver waits in slices this long.
_WAIT_SLICE_S = 0.2
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


class _IngestTimer:
    """The worker's phase windows: those of ``meter`` (if any), and the seconds spent in
    ``"ingest"`` summed, which the driver's progress weighs turns by."""

    def __init__(self, meter: PhaseMeter | None) -> None:
        self._meter = meter
        self.seconds = 0.0

    @contextlib.contextmanager
    def phase(self, name: str, /) -> Iterator[None]:
        started = time.perf_counter()
        try:
            with contextlib.nullcontext() if self._meter is None else self._meter.phase(name):
                yield
        finally:
            if name == "ingest":
                self.seconds += time.perf_counter() - started


class _Worker:
    """The body of one actor: the agent, built once from the spec, evaluates samples.

    ``metered``: every model call of the agent goes through a meter of this actor's
    own (:meth:`~himga.eval.AgentSpec.assemble`), in the phase windows of the local
    loop, and is returned with the results of the sample it was made for.
    """

    def __init__(
        self,
        spec: AgentSpec,
        context: Mapping[str, Any],
        max_concurrency: int | None,
        memory_timeout: float | None,
        metered: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._calls: list[ProxyCall] = []
        # Closed with the actor's process: its proxies serve on daemon threads.
        self._meter = RunMeter(self._collect) if metered else None
        self._agent, create_memory = spec.assemble(self._meter)
        self._timer = _IngestTimer(self._meter)
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
            memory_meter=self._timer,
            arm=arm,
        )

    def _collect(self, call: ProxyCall) -> None:
        with self._lock:
            self._calls.append(call)

    def identity(self) -> dict[str, Any]:
        """The run identity of the agent this actor built."""
        assert self._options.identity is not None
        return self._options.identity.to_dict()

    def evaluate(self, sample: Sample) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
        """Every pending question of one sample, evaluated as the local executor does, the
        model calls metered since the last sample returned (none unless ``metered``) and
        the seconds its ingest took.

        Ray runs an actor's tasks one at a time, so those are this sample's -- and
        any of a memory call that timed out before and still runs.
        """
        self._timer.seconds = 0.0
        answering = (
            contextlib.nullcontext()
            if self._meter is None
            else self._meter.answer_phase("answering")
        )
        with answering:
            results = asyncio.run(evaluate_here([sample], self._agent, self._options))
        if self._meter is not None:
            self._meter.settle()  # this sample's last calls are collected, not the next's
        with self._lock:
            calls, self._calls = self._calls, []
        calls_json = [call.to_json() for call in calls]
        return [result.to_dict() for result in results], calls_json, self._timer.seconds


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
        actor_class = ray.remote(_Worker).options(**self._actor_options())
        actors = [
            actor_class.remote(
                spec, context, per_worker, options.memory_timeout, self.on_call is not None
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
            )
            try:
                work: deque[tuple[Sample, list[QAPair]]] = deque()
                for sample in samples:
                    pending = ledger.plan(sample)
                    if pending:
                        work.append((sample, pending))
                self._schedule(ray, actors, work, ledger, stop)
            finally:
                ledger.close()
            return ledger.results()
        finally:
            for actor in actors:
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
        ledger: Ledger,
        stop: threading.Event,
    ) -> None:
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
                    load[number] += 1
            if not in_flight:
                # Every actor is gone for good: what is left fails, recorded.
                while work:
                    sample, pending = work.popleft()
                    ledger.progress.skip(turns=turn_count(sample))
                    ledger.fail(sample, pending, "no Ray worker is left alive")
                break
            _check_stop(stop)
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=_WAIT_SLICE_S)
            for ref in ready:
                number, sample, pending = in_flight.pop(ref)
                load[number] -= 1
                try:
                    data, calls, ingest_s = ray.get(ref)
                    returned = [EvalResult.from_dict(result) for result in data]
                except ray.exceptions.RayActorError as exc:
                    if number in live and isinstance(exc, ray.exceptions.ActorDiedError):
                        live.remove(number)
                    ledger.progress.skip(turns=turn_count(sample))
                    ledger.fail(sample, pending, _after_retries(self, exc))
                    continue
                except ray.exceptions.RayError as exc:
                    ledger.progress.skip(turns=turn_count(sample))
                    ledger.fail(sample, pending, _after_retries(self, exc))
                    continue
                # A worker reports a sample whole: its turns count when it returns.
                ledger.progress.ingested(turn_count(sample), seconds=ingest_s)
                if self.on_call is not None:
                    # Before the results, as locally a call is logged when made: a driver
                    # stopped in between reruns the sample, counting its calls again.
                    for call in calls:
                        self.on_call(ProxyCall.from_json(call))
                asked = {qa.question_id for qa in pending}
                for result in returned:
                    if result.sample_id == sample.sample_id and result.question_id in asked:
                        ledger.record(result)
                        asked.discard(result.question_id)
                missing = [qa for qa in pending if qa.question_id in asked]
                ledger.fail(sample, missing, "the worker returned no result for it")


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

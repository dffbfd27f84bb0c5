"""``himga eval`` without the command line: evaluate a memory into a run directory."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import himga
from himga._errors import HimgaError
from himga.agent import BaseAgent, prompt_hashes
from himga.benchmarks._judge_prompts import OFFICIAL
from himga.data.schema import Sample
from himga.eval import (
    SEARCH_K,
    AgentSpec,
    CheckpointMismatchError,
    EvalOptions,
    EvalResult,
    JudgeScores,
    RayExecutor,
    RunIdentity,
    Shard,
    compute_metrics,
    metrics_of,
    redact,
    run_eval,
)
from himga.eval._checkpoint import Checkpoint
from himga.eval._identity import llm_identity, memory_config, temperature_of
from himga.eval._memory_calls import DEFAULT_MEMORY_TIMEOUT
from himga.eval._oracle import Arm
from himga.eval._shard import coverage
from himga.llm import (
    HasCacheStats,
    HasMaxRetries,
    HasUsage,
    HasWeights,
    LLMClient,
    LLMConfigError,
)
from himga.llm._client import public_url
from himga.memory import BaseMemory, MemoryProvenance, ResolvedMemory, resolve_memory
from himga.metering import CALLS_FILE, CallLog, CostSummary, ProxyCall, RunMeter, read_calls
from himga.runs._journal import read_legacy_verdicts
from himga.runs._judge import carried_judges, judge_entry, judge_into_record
from himga.runs._manifest import CostsInfo, DatasetInfo, Manifest, MemoryInfo, ShardInfo
from himga.runs._preflight import PreflightReport, preflight
from himga.runs._rundir import PLAN, RunDir, RunDirError, RunReadError

if TYPE_CHECKING:
    from himga.benchmarks import Benchmark
    from himga.data import QuestionSubset, Resolution

__all__ = [
    "ArmError",
    "EvalRequest",
    "PreflightFailedError",
    "RunOutcome",
    "RunPlan",
    "default_run_directory",
    "evaluate_run",
]


class ArmError(HimgaError, ValueError):
    """The oracle arm was asked for with a memory: its context is the gold evidence."""


class PreflightFailedError(HimgaError, ValueError):
    """The memory failed pre-flight; ``report`` says which contract and how."""

    def __init__(self, report: PreflightReport) -> None:
        super().__init__(f"pre-flight failed: [{report.failed}] {report.problem}")
        self.report = report


@dataclass(frozen=True)
class EvalRequest:
    """What ``himga eval`` is asked to do; each field is the option of the same name.

    ``memory_arguments`` are the memory's constructor arguments, ``preflight``
    whether to check it first, ``out`` the run directory (default
    ``runs/<UTC timestamp>``), ``worker_resources`` each Ray worker's,
    ``search_k`` the search depth (:class:`~himga.eval.EvalOptions`), ``memory_timeout``
    each memory call's deadline in seconds (``None``: none), and
    ``arguments`` the invocation as the manifest records it (default: these fields).

    ``judge_llm``, ``judge_model`` and ``judge_base_url`` make a judge apart from the
    answerer: its provider (default: ``llm``), model (default: ``model`` when the
    provider is the answerer's, else the provider's default) and OpenAI- or
    Anthropic-compatible server (default: the provider's environment variable); with
    none of them the answerer judges. ``questions`` is a file of question ids
    (:class:`~himga.data.QuestionSubset`): only those are evaluated. ``arm`` is where
    each question's context comes from (:class:`~himga.eval.EvalOptions`); the
    ``"oracle"`` arm takes only the ``null`` memory (:class:`ArmError` otherwise).
    """

    dataset: str = "locomo"
    data_path: Path | None = None
    memory: str = "bm25"
    memory_arguments: Mapping[str, Any] = field(default_factory=dict)
    memory_timeout: float | None = DEFAULT_MEMORY_TIMEOUT
    preflight: bool = True
    llm: str | None = None
    model: str | None = None
    llm_cache: Path | None = None
    llm_timeout: float | None = None
    llm_retries: int | None = None
    llm_threads: int | None = None
    llm_context: int | None = None
    limit: int | None = None
    out: Path | None = None
    resume: bool = False
    fresh: bool = False
    judge: bool | None = None
    judge_llm: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    questions: Path | None = None
    arm: Arm = "memory"
    concurrency: int | None = None
    show_progress: bool = True
    shard: Shard | None = None
    ray: str | None = None
    workers: int | None = None
    worker_resources: Mapping[str, float] = field(default_factory=dict)
    search_k: int = SEARCH_K
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunOutcome:
    """A finished ``himga eval``: where it wrote, what it found, and how much was resumed
    (``resumed`` of the ``planned`` questions came from the checkpoint)."""

    out: Path
    manifest: Manifest
    metrics: dict[str, Any]
    results: list[EvalResult]
    resumed: int
    planned: int

    @property
    def incomplete(self) -> bool:
        """Whether any question failed: a memory, LLM or judge error."""
        counts = self.metrics["counts"]
        return bool(counts["errors"] or counts["memory_errors"] or counts.get("judge_errors"))

    def summary(self) -> list[str]:
        """What ``himga eval`` prints after the table: the counts and where they were written."""
        counts = self.metrics["counts"]
        judged = self.manifest.judge is not None
        return [
            f"{counts['questions']} questions, {counts['memory_errors']} memory errors, "
            f"{counts['answered']} answered, {counts['errors']} LLM errors"
            + (f", {counts['judge_errors']} judge errors" if judged else "")
            + f"; wrote {self.out}/results.jsonl, metrics.json, manifest.json"
        ]

    def problems(self) -> list[str]:
        """What failed, for stderr: the first three memory and LLM errors, and one line per
        kind of failure with its count and what to do (empty when the run is complete)."""
        counts = self.metrics["counts"]
        lines = [
            f"memory error: {f['sample_id']} {f['question_id']}: "
            f"{f['method']} raised {f['type']}: {f['message']}"
            + (f" (at {f['raised_at']})" if f.get("raised_at") else "")
            for f in self.metrics["memory_errors"][:3]
        ]
        if counts["memory_errors"]:
            lines.append(
                f"himga eval: incomplete: {counts['memory_errors']} questions failed in the "
                "memory (listed in metrics.json, excluded from the metrics)"
            )
        # Failed calls are reported, never scored; rerunning with --resume retries them.
        lines += [
            f"error: {e['sample_id']} {e['question_id']}: {e['error']}"
            for e in self.metrics["errors"][:3]
        ]
        if counts["errors"]:
            lines.append(
                f"himga eval: incomplete: {counts['errors']} LLM calls failed after retries "
                f"(listed in metrics.json); rerun with --out {self.out} --resume to retry them"
            )
        if counts.get("judge_errors"):
            lines.append(
                f"himga eval: incomplete: {counts['judge_errors']} answers could not be judged "
                "(the judge call failed or named no verdict; judge_error in results.jsonl)"
            )
        return lines


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_run_directory(started_at: str | None = None) -> Path:
    """Where a run without an ``out`` goes: ``runs/<UTC timestamp>`` (``started_at``: now)."""
    return Path("runs") / (started_at or _now()).replace(":", "").replace("-", "")


def _dataset_checksum(path: Path) -> str:
    """SHA-256 of the dataset file; of its files' names and bytes, sorted, for a directory."""
    digest = hashlib.sha256()
    single = path.is_file()
    files = [path] if single else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if not single:
            digest.update(str(file.relative_to(path)).encode("utf-8", "surrogateescape") + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _silent(note: str) -> None:
    """The default ``notify``: tell nothing."""


def evaluate_run(request: EvalRequest, *, notify: Callable[[str], None] = _silent) -> RunOutcome:
    """Run ``request`` into its run directory and return what it wrote.

    ``notify`` receives notes worth telling before the run ends (a limited
    pre-flight). Raises :class:`PreflightFailedError`, :class:`RunDirError`
    (the directory cannot hold this run), and the errors of the dataset,
    memory and LLM configuration.

    Run here, every model call is counted per phase (:mod:`himga.metering`):
    the memory's own (an :class:`~himga.memory.EndpointUser`'s endpoint routed
    through a loopback :class:`~himga.metering.RecordingProxy`, an
    :class:`~himga.memory.LLMUser` given a client that calls through one) and the
    answering and judging client's, appended to ``calls.jsonl`` and summed in the
    manifest's ``costs``. On Ray the pre-flight and the judging are metered
    here, and each worker meters its own agent's calls with proxies and windows
    of its own and returns them with each sample's results
    (:class:`~himga.eval.RayExecutor` ``on_call``), appended here; the calls of
    an attempt lost with its actor (a sample retried after the actor died) are not
    counted.
    """
    log = CallLog()
    with RunMeter(log) as meter:
        try:
            return _evaluate(request, notify, meter, log)
        finally:
            log.close()


@dataclass(frozen=True)
class RunPlan:
    """A run resolved from its :class:`EvalRequest` once, before its directory is touched.

    Every value the run needs more than once is here, computed a single time: the
    resolved ``memory`` spec and its ``provenance`` (the source hash), the pre-flight
    ``report`` (``None`` when skipped), the agent's ``spec``, the built ``agent`` and
    ``create_memory`` (its fresh-memory factory), the ``judge_llm`` (``None`` when the
    run does not judge; ``judge_apart`` when it is not the answerer), the
    ``benchmark`` looked up by name, the ``dataset`` resolved and its ``dataset_sha256``,
    the question ``subset`` (``None``: all), the ``samples`` to evaluate (limited,
    subset and shard applied; ``covered`` is what they covered before the shard), the
    run directory ``out`` and the run ``identity``. ``started_at`` / ``started`` are
    when the run began (UTC ISO time, :func:`time.perf_counter`).
    """

    request: EvalRequest
    started_at: str
    started: float
    subset: QuestionSubset | None
    memory: ResolvedMemory
    report: PreflightReport | None
    spec: AgentSpec
    agent: BaseAgent
    create_memory: Callable[[], BaseMemory]
    judge_llm: LLMClient | None
    judge_apart: bool
    benchmark: Benchmark
    dataset: Resolution
    dataset_sha256: str
    samples: list[Sample]
    covered: list[dict[str, Any]]
    out: Path
    provenance: MemoryProvenance
    identity: RunIdentity

    @property
    def keys(self) -> set[tuple[str, str]]:
        """The (sample id, question id) of every question the run is to answer."""
        return {(s.sample_id, qa.question_id) for s in self.samples for qa in s.qa_pairs}


def _evaluate(
    request: EvalRequest, notify: Callable[[str], None], meter: RunMeter, log: CallLog
) -> RunOutcome:
    """Plan the run once, then carry it out into its run directory."""
    return _execute(_plan(request, notify, meter), notify, meter, log)


def _plan(request: EvalRequest, notify: Callable[[str], None], meter: RunMeter) -> RunPlan:
    """Resolve ``request`` into a :class:`RunPlan`; nothing is written into the run directory.

    The order is the order of the failures a user sees: the cheap ones (the judge's
    options, the question file, the arm, the memory spec, pre-flight, API keys)
    before the dataset is read or fetched.
    """
    from himga.benchmarks import dataset_name, get_benchmark
    from himga.data import QuestionSubset

    started_at = _now()
    started = time.perf_counter()
    if ":" in request.dataset:  # a module:attr benchmark: loaded, registered, named
        request = dataclasses.replace(request, dataset=dataset_name(request.dataset))
    apart = _judge_apart(request)
    subset = None if request.questions is None else QuestionSubset.read(request.questions)
    if request.arm == "oracle" and request.memory != "null":
        raise ArmError(
            f"the oracle arm answers from each question's gold evidence turns, not from a "
            f"memory: use it with --memory null, not {request.memory!r}"
        )
    resolved = resolve_memory(request.memory, request.memory_arguments)
    report = _preflight(request, resolved, notify, meter) if request.preflight else None
    spec, agent, create_memory, judge_llm = _assemble(request, resolved, apart, meter)
    # A plug-in benchmark's refused metrics fail the run now, not once it is all answered.
    metrics_of(request.dataset)
    # Looked up before the dataset is resolved, which looks it up first too: an unknown
    # name fails with the same error at the same point.
    benchmark = get_benchmark(request.dataset)
    dataset, dataset_sha256, samples, covered = _samples(request, benchmark, subset, notify)
    provenance = spec.provenance(agent.memory, resolved)
    identity = _identity(
        request, spec, agent, judge_llm, benchmark, dataset_sha256, subset, provenance
    )
    return RunPlan(
        request=request,
        started_at=started_at,
        started=started,
        subset=subset,
        memory=resolved,
        report=report,
        spec=spec,
        agent=agent,
        create_memory=create_memory,
        judge_llm=judge_llm,
        judge_apart=apart is not None,
        benchmark=benchmark,
        dataset=dataset,
        dataset_sha256=dataset_sha256,
        samples=samples,
        covered=covered,
        out=request.out or default_run_directory(started_at),
        provenance=provenance,
        identity=identity,
    )


def _preflight(
    request: EvalRequest, resolved: ResolvedMemory, notify: Callable[[str], None], meter: RunMeter
) -> PreflightReport:
    """Pre-flight the memory, its model calls metered; :class:`PreflightFailedError` if it
    fails, a note through ``notify`` if it checked only part of the contract."""

    def routed() -> BaseMemory:
        memory = resolved.factory()
        meter.route(memory)
        return memory

    # Pre-flight's reproducer names the factory it checks: the user's, not this wrapper.
    functools.update_wrapper(routed, resolved.factory, updated=())
    with meter.phase("preflight"):
        report = preflight(
            dataclasses.replace(resolved, factory=routed),
            timeout=request.memory_timeout,
            announce=notify,
        )
    if report.failed is not None:
        raise PreflightFailedError(report)
    if report.limited:
        checked = ", ".join(report.checked) or "nothing"
        notify(f"pre-flight: only {checked} checked ({report.limited})")
    return report


def _assemble(
    request: EvalRequest, resolved: ResolvedMemory, apart: AgentSpec | None, meter: RunMeter
) -> tuple[AgentSpec, BaseAgent, Callable[[], BaseMemory], LLMClient | None]:
    """The agent's spec, the agent built from it with every model call metered, its
    fresh-memory factory, and the judging client (``None`` when the run does not judge)."""
    # The Ray workers open the same cache file, so a re-run is answered from it there too.
    spec = AgentSpec(
        memory=request.memory,
        memory_arguments=resolved.arguments,
        llm=request.llm,
        model=request.model,
        llm_settings=_llm_settings(request),
    )
    # The agent built as each Ray worker builds its own: every model call through the
    # meter's proxies (the answering and judging client's, the memory's), and a memory
    # that builds with an LLM (MAGMA) given the run's provider, model and cache; so is
    # the fresh memory that replaces one stuck in a timed-out call.
    agent, create_memory = spec.assemble(meter, resolved)
    if agent.llm is None or request.judge is False:
        return spec, agent, create_memory, None
    if apart is not None:
        # Its calls go through a proxy of their own when it calls another upstream.
        return spec, agent, create_memory, apart.metered_llm(meter.judge_upstream)
    return spec, agent, create_memory, agent.llm


def _samples(
    request: EvalRequest,
    benchmark: Benchmark,
    subset: QuestionSubset | None,
    notify: Callable[[str], None],
) -> tuple[Resolution, str, list[Sample], list[dict[str, Any]]]:
    """The dataset resolved, its checksum, the samples to evaluate (``--limit``, the
    question subset and the shard applied) and what they cover before the shard (what
    every shard writes, so a merge can tell a missing question)."""
    from himga.benchmarks import load_dataset, resolve_dataset

    resolution = resolve_dataset(request.dataset, path=request.data_path)
    dataset_sha256 = _dataset_checksum(resolution.path)
    samples = load_dataset(request.dataset, path=resolution.path, limit=request.limit)
    if subset is not None:
        where = request.dataset + ("" if request.limit is None else f" --limit {request.limit}")
        samples = subset.select(samples, where)
    covered = coverage(samples)
    if request.limit is not None and subset is None:
        note = _category_note(request.limit, benchmark.categories, samples)
        if note:
            notify(note)
    if request.shard is not None:
        samples = request.shard.select(samples)
    return resolution, dataset_sha256, samples, covered


def _identity(
    request: EvalRequest,
    spec: AgentSpec,
    agent: BaseAgent,
    judge_llm: LLMClient | None,
    benchmark: Benchmark,
    dataset_sha256: str,
    subset: QuestionSubset | None,
    provenance: MemoryProvenance,
) -> RunIdentity:
    """What identifies the run (a resume of another is refused): the agent, the judge and
    its prompts, the dataset, the search depth, the question subset and the arm."""
    from himga.eval.judge import prompt_hashes as judge_prompt_hashes

    judge_identity = None
    if judge_llm is not None:
        judge_identity = {
            **llm_identity(judge_llm),
            "prompt_hashes": judge_prompt_hashes(
                benchmark.judge.prompts if benchmark.judge else {}
            ),
        }
    identity = spec.run_identity(
        agent,
        judge=judge_identity,
        dataset=request.dataset,
        dataset_sha256=dataset_sha256,
        search_k=request.search_k,
        provenance=provenance,
    )
    return dataclasses.replace(
        identity, questions=None if subset is None else subset.sha256, arm=request.arm
    )


def _execute(
    plan: RunPlan, notify: Callable[[str], None], meter: RunMeter, log: CallLog
) -> RunOutcome:
    """Carry out ``plan`` in its run directory: answer, judge, then write the results,
    the metrics and the manifest, in that order."""
    request = plan.request
    with RunDir(plan.out) as run_dir:
        run_dir.claim(resume=request.resume, fresh=request.fresh)
        log.open(run_dir.file(CALLS_FILE))
        keys = plan.keys
        resumed = _resumable(run_dir, plan.identity, keys) if request.resume else 0
        # What the checkpoint alone cannot tell a reader while the run is under way (or
        # after it was killed): how many questions it is to answer, and since when.
        run_dir.write_json(PLAN, {"questions": len(keys), "started_at": plan.started_at})
        if request.shard is not None:
            run_dir.write_json("shard.json", {"shard": str(request.shard), "covers": plan.covered})
        results = _answer(plan, run_dir, meter, log)
        judge = _judge_answers(plan, run_dir, results, meter, notify)
        # Every call answered is in the log before it is read; a call the log could not
        # write (full disk) fails the run here, on this thread.
        meter.settle()
        log.check()
        metrics = compute_metrics(results, judge)
        wall = time.perf_counter() - plan.started
        checksum = run_dir.write_results(_records(results, judge))
        run_dir.write_json("metrics.json", metrics)
        manifest = _manifest(
            plan, run_dir, meter, notify, _Outputs(results, judge, metrics, checksum, resumed), wall
        )
        run_dir.write_manifest(manifest)
    return RunOutcome(plan.out, manifest, metrics, results, resumed, len(keys))


def _answer(plan: RunPlan, run_dir: RunDir, meter: RunMeter, log: CallLog) -> list[EvalResult]:
    """Every planned question answered (those the checkpoint holds: kept), here or on Ray."""
    request = plan.request
    options = EvalOptions(
        show_progress=request.show_progress,
        checkpoint=run_dir.checkpoint,
        memory_timeout=request.memory_timeout,
        identity=plan.identity,
        search_k=request.search_k,
        arm=request.arm,
    )
    try:
        if request.ray is not None:
            # Each worker meters its own agent's calls and returns them with its
            # sample's results; they are appended to calls.jsonl here.
            executor = _ray_executor(request, on_call=log)
            return run_eval(plan.samples, agent=plan.spec, options=options, executor=executor)
        local = dataclasses.replace(
            options,
            max_concurrency=request.concurrency,
            memory_factory=plan.create_memory,
            memory_meter=meter,
        )
        with meter.answer_phase("answering"):
            return run_eval(plan.samples, agent=plan.agent, options=local)
    except CheckpointMismatchError as exc:
        raise RunDirError(f"{exc}; rerun with --fresh to start over in {plan.out}") from exc


def _judge_answers(
    plan: RunPlan,
    run_dir: RunDir,
    results: list[EvalResult],
    meter: RunMeter,
    notify: Callable[[str], None],
) -> JudgeScores | None:
    """The judge's scores of ``results``, ``None`` when the run does not judge."""
    if plan.judge_llm is None:
        return None
    # Verdicts are appended to verdicts.jsonl as each arrives, so a resumed run
    # re-asks none: those gathered before an interrupt, a failure or kill -9 too
    # (a run from before the record: its judge_cache.json and journal).
    with meter.answer_phase("judging"):
        judge, _ = judge_into_record(
            run_dir,
            results,
            plan.judge_llm,
            known=read_legacy_verdicts(run_dir.path, notify),
            notify=notify,
            show_progress=plan.request.show_progress,
            max_concurrency=plan.request.concurrency,
        )
    return judge


@dataclass(frozen=True)
class _Outputs:
    """What a run produced, for its manifest: the ``results``, the ``judge``'s scores, the
    ``metrics``, the ``checksum`` of ``results.jsonl``, and how many were ``resumed``."""

    results: list[EvalResult]
    judge: JudgeScores | None
    metrics: dict[str, Any]
    checksum: str
    resumed: int


def _manifest(
    plan: RunPlan,
    run_dir: RunDir,
    meter: RunMeter,
    notify: Callable[[str], None],
    outputs: _Outputs,
    wall: float,
) -> Manifest:
    """The run's ``manifest.json``. Its fields are computed in the order they are listed:
    ``judges`` and ``costs`` read the run directory, ``history`` may tell ``notify``."""
    request, results, judge, subset = plan.request, outputs.results, outputs.judge, plan.subset
    llm = plan.agent.llm
    prompts: dict[str, Any] = {"answer": prompt_hashes()}
    if judge is not None:
        prompts["judge"] = judge.prompt_hashes
    judge_url = meter.judge_endpoint or meter.answer_endpoint
    return Manifest(
        himga_version=himga.__version__,
        arguments=_recorded_arguments(request, judged=judge is not None),
        started_at=plan.started_at,
        finished_at=_now(),
        wall_time_s=round(wall, 3),
        dataset=DatasetInfo(
            name=request.dataset,
            path=str(plan.dataset.path),
            sha256=plan.dataset_sha256,
            limit=request.limit,
            samples=len(plan.samples),
            questions=len(results),
        ),
        memory=_memory_info(plan),
        preflight=None if plan.report is None else plan.report.describe(),
        run_identity=plan.identity.fingerprint,
        shard=None
        if request.shard is None
        else ShardInfo(request.shard.index, request.shard.count),
        resumed=outputs.resumed,
        llm=_describe_llm(llm, meter.answer_endpoint, request.concurrency),
        prompt_hashes=prompts,
        judge=None
        if judge is None
        else {**judge.describe(), "base_url": judge_url, "apart": plan.judge_apart},
        judges=_judges(run_dir, results, judge, judge_url),
        tokens={
            "answer_input": sum(r.input_tokens for r in results),
            "answer_output": sum(r.output_tokens for r in results),
            "client_usage_this_invocation": _usage(llm),
        },
        counts=outputs.metrics["counts"],
        python=platform.python_version(),
        platform=platform.platform(),
        results_sha256=outputs.checksum,
        costs=_costs(run_dir, meter),
        questions=None
        if subset is None
        else {"file": str(subset.path), "ids": len(subset.ids), "sha256": subset.sha256},
        history=_history(run_dir, notify) if request.resume else (),
        arm=request.arm,
    )


def _recorded_arguments(request: EvalRequest, *, judged: bool) -> dict[str, Any]:
    """The manifest's ``arguments``: the invocation, whether it judged, and the judge's
    server as every base URL is recorded (no user info, no query)."""
    arguments = dict(request.arguments or _arguments(request))
    arguments["judge"] = judged
    if request.judge_base_url is not None:
        arguments["judge_base_url"] = public_url(request.judge_base_url)
    return arguments


def _memory_info(plan: RunPlan) -> MemoryInfo:
    """The manifest's ``memory``: the spec, what it resolved to and the code it came from."""
    memory = plan.agent.memory
    return MemoryInfo(
        spec=plan.request.memory,
        target=plan.memory.target,
        arguments=plan.identity.memory_arguments,
        class_name=f"{type(memory).__module__}:{type(memory).__qualname__}",
        repr=memory_config(memory),
        distribution=plan.provenance.distribution,
        version=plan.provenance.version,
        source_sha256=plan.provenance.source_sha256,
        source_files=len(plan.provenance.files),
        timeout_s=plan.request.memory_timeout,
    )


def _category_note(limit: int, categories: Sequence[str], samples: Sequence[Sample]) -> str:
    """What ``--limit`` left out, when it leaves some of the benchmark's question categories
    without a question (a benchmark ordered by category keeps only the first ones)."""
    asked = {qa.category for sample in samples for qa in sample.qa_pairs}
    missing = [category for category in categories if category not in asked]
    if not missing:
        return ""
    kept = len(categories) - len(missing)
    return (
        f"--limit {limit} covers {kept} of the {len(categories)} question categories; "
        f"no question of {', '.join(missing)} (the metrics cover the others only)"
    )


def _judge_apart(request: EvalRequest) -> AgentSpec | None:
    """The client recipe of a judge apart from the answerer (only its LLM fields are
    used), ``None`` when the request names none; :class:`~himga.llm.LLMConfigError`
    when it names one without an answerer or with judging off."""
    named = [
        f"judge_{name}"
        for name in ("llm", "model", "base_url")
        if getattr(request, f"judge_{name}") is not None
    ]
    if not named:
        return None
    if request.llm is None or request.judge is False:
        why = "without llm there is nothing to judge" if request.llm is None else "judge is off"
        raise LLMConfigError(f"{', '.join(named)} given but {why}")
    provider = request.judge_llm or request.llm
    settings = _llm_settings(request)
    if request.judge_base_url is not None:
        settings["base_url"] = request.judge_base_url
    return AgentSpec(
        memory=request.memory,
        llm=provider,
        model=request.judge_model or (request.model if provider == request.llm else None),
        llm_settings=settings,
    )


def _llm_settings(request: EvalRequest) -> dict[str, Any]:
    """The :func:`~himga.llm.get_client` settings the request gives (the others: defaults),
    as plain data: the Ray workers build their clients from them too."""
    settings: dict[str, Any] = {
        "cache": None if request.llm_cache is None else str(request.llm_cache),
        "timeout": request.llm_timeout,
        "max_retries": request.llm_retries,
        "threads": request.llm_threads,
        "context": request.llm_context,
    }
    return {name: value for name, value in settings.items() if value is not None}


def _judges(
    run_dir: RunDir, results: Sequence[EvalResult], judge: JudgeScores | None, base_url: str | None
) -> tuple[dict[str, Any], ...]:
    """The manifest's ``judges``: the run's own (scores in ``results.jsonl``), after those
    ``himga judge`` added before a resume (a reader tells which judged other answers)."""
    if judge is None:
        return ()
    own = judge_entry(judge, prompt=OFFICIAL, base_url=base_url, results=results, source="results")
    return (*map(dict, carried_judges(run_dir, own["id"])), own)


def _history(run_dir: RunDir, notify: Callable[[str], None]) -> tuple[dict[str, Any], ...]:
    """The record of every invocation before this resume: the manifest the directory
    holds (none if the run never finished one), after the history it kept itself. One
    that cannot be read is said through ``notify`` and not kept."""
    if not run_dir.file("manifest.json").exists():
        return ()
    try:
        previous = run_dir.read_json("manifest.json")
    except RunReadError as exc:
        notify(f"{exc}: the record of the invocations before this resume is not kept")
        return ()
    if not isinstance(previous, dict):
        notify(f"{run_dir.file('manifest.json')}: not an object: its record is not kept")
        return ()
    earlier = previous.pop("history", [])
    kept = (
        [record for record in earlier if isinstance(record, dict)]
        if isinstance(earlier, list)
        else []
    )
    return (*kept, previous)


def _ray_executor(request: EvalRequest, on_call: Callable[[ProxyCall], None]) -> RayExecutor:
    executor = RayExecutor(
        address=request.ray,
        num_workers=request.workers or 2,
        llm_concurrency_total=request.concurrency,
        on_call=on_call,
    )
    if request.worker_resources:
        executor = dataclasses.replace(executor, worker_resources=dict(request.worker_resources))
    return executor


def _arguments(request: EvalRequest) -> dict[str, Any]:
    """The request as the manifest's ``arguments``: JSON scalars, the rest as strings."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(request):
        if f.name in ("arguments", "memory_arguments", "worker_resources"):
            continue
        value = getattr(request, f.name)
        scalar = value is None or isinstance(value, (int, float, bool))
        found[f.name] = value if scalar else str(value)
    return found


def _records(results: Sequence[EvalResult], judge: JudgeScores | None) -> list[dict[str, Any]]:
    """The lines of ``results.jsonl``: each result, with its judge score and error if judged."""
    records = []
    for index, result in enumerate(results):
        record = result.to_dict()
        if judge is not None:
            score = judge[index]
            record["judge"] = None if score != score else score  # NaN -> null
            error = judge.errors.get(index)
            record["judge_error"] = None if error is None else redact(error)
        records.append(record)
    return records


def _resumable(run_dir: RunDir, identity: RunIdentity, keys: set[tuple[str, str]]) -> int:
    """How many of ``keys`` the checkpoint holds finished; raises if it is another run's."""
    store = Checkpoint(run_dir.checkpoint, identity.to_dict())
    try:
        done = store.open()
    except CheckpointMismatchError as exc:
        raise RunDirError(f"{exc}; rerun with --fresh to start over in {run_dir.path}") from exc
    finally:
        store.close()
    return sum(
        key in keys and r.error is None and r.memory_error is None for key, r in done.items()
    )


def _costs(run_dir: RunDir, meter: RunMeter) -> CostsInfo:
    """The manifest's ``costs``: every call in ``calls.jsonl`` (this invocation's and
    those of the parts it resumes), summed per phase."""
    file = run_dir.file(CALLS_FILE)
    try:
        calls = read_calls(file)
    except ValueError as exc:
        raise RunReadError(f"{exc} (remove {file.name} or rerun with --fresh)") from None
    return CostsInfo(
        CostSummary.of(calls), meter.memory_endpoints, meter.answer_endpoint, meter.judge_endpoint
    )


def _describe_llm(
    llm: LLMClient | None, base_url: str | None, concurrency: int | None
) -> dict[str, Any] | None:
    """The answering client as the manifest records it, with the public form of the
    ``base_url`` it calls (its upstream, not the loopback proxy in between)."""
    if llm is None:
        return None
    cache = llm.cache_stats if isinstance(llm, HasCacheStats) else None
    described = {
        "provider": llm.provider,
        "model": llm.model,
        "base_url": None if base_url is None else public_url(base_url),
        "temperature": temperature_of(llm),
        "max_retries": llm.max_retries if isinstance(llm, HasMaxRetries) else None,
        "max_concurrency": concurrency or llm.max_concurrency,
        "cache": None if cache is None else dataclasses.asdict(cache),
    }
    if isinstance(llm, HasWeights):
        described["weights"] = dict(llm.weights)
    return described


def _usage(llm: object) -> dict[str, Any] | None:
    """The client's own call and token totals, if it keeps them."""
    if not isinstance(llm, HasUsage):
        return None
    return dataclasses.asdict(llm.usage)

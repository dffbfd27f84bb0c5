"""LLM-as-judge scoring of evaluation results, for any benchmark.

Each result is judged by the :class:`~himga.benchmarks.Judge` of its benchmark
(``Benchmark.judge``, found by the result's ``dataset``): the judge says which
calls to make (:meth:`~himga.benchmarks.Judge.requests`), reads each reply
(:meth:`~himga.benchmarks.Judge.parse`) and scores the question from them
(:meth:`~himga.benchmarks.Judge.score`). LoCoMo's and LongMemEval's judges are in
:mod:`himga.benchmarks.locomo` and :mod:`himga.benchmarks.longmemeval`.

Verdicts are parsed strictly: a reply without one is an error (``NaN`` score with
the reason in :attr:`JudgeScores.errors`), never a silent 0. So is a failed call,
a result without a prediction and one whose benchmark has no judge.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from himga.benchmarks._judge_prompts import (
    OFFICIAL,
    JudgePromptError,
    get_judge_prompt,
    judge_prompts,
)
from himga.benchmarks._protocol import JSONValue, Judge, JudgeRequest, UnjudgeableError
from himga.benchmarks._registry import benchmarks, find_benchmark
from himga.llm._fake_server import offline_responder
from himga.llm._protocol import (
    CachingLLMClient,
    ChatMessage,
    HasTemperature,
    HasWeights,
    LLMClient,
)
from himga.scoring._result import EvalResult

__all__ = [
    "JudgeScores",
    "UnjudgeableError",
    "abatch_judge",
    "batch_judge",
    "judge_id",
    "offline_judge_responder",
    "prompt_hashes",
    "recorded_scores",
]


def judge_id(provider: str, model: str, prompt: str = OFFICIAL) -> str:
    """A judge's id: ``provider:model:prompt`` (e.g. ``openai:gpt-4o-mini:official``).

    A provider and a prompt name hold no ``:``, so the id reads back unambiguously
    even when the model name holds one (``qwen2.5:1.5b``). One model served at two
    base URLs is one judge."""
    return f"{provider}:{model}:{prompt}"


def prompt_hashes(prompts: Mapping[str, str]) -> dict[str, str]:
    """The SHA-256 of each template, by name, sorted by name."""
    return {
        name: hashlib.sha256(text.encode("utf-8")).hexdigest()
        for name, text in sorted(prompts.items())
    }


class JudgeScores(list[float]):
    """Judge scores aligned with the judged results: 1.0 correct, 0.0 wrong,
    ``NaN`` not judged (the reason is in :attr:`errors`, by index).

    Also records how the scores were made: ``provider``, ``model``,
    ``temperature`` (``None`` when the client does not expose it), for a model whose
    weights are a local file its ``weights`` (the file's SHA-256, the runtime; ``None``
    otherwise) and the SHA-256 of every judge prompt used (:attr:`prompt_hashes`, by
    prompt name).
    """

    def __init__(
        self,
        scores: Sequence[float],
        *,
        provider: str,
        model: str,
        temperature: float | None,
        prompt_hashes: Mapping[str, str],
        errors: Mapping[int, str],
        weights: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(scores)
        self.provider = provider
        self.model = model
        self.temperature = temperature
        self.prompt_hashes = dict(prompt_hashes)
        self.errors = dict(errors)
        self.weights = None if weights is None else dict(weights)

    def describe(self) -> dict[str, object]:
        """The judge configuration, JSON-ready, for run manifests (``weights`` only for a
        local model file)."""
        described: dict[str, object] = {
            "provider": self.provider,
            "model": self.model,
            "temperature": self.temperature,
            "prompt_hashes": self.prompt_hashes,
            "errors": len(self.errors),
        }
        if self.weights is not None:
            described["weights"] = self.weights
        return described


def _cache_key(llm: LLMClient, prompt: str) -> str:
    return _request_key(llm.provider, llm.model, prompt)


def _request_key(provider: str, model: str, prompt: str) -> str:
    material = json.dumps([provider, model, prompt])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def recorded_scores(
    results: Sequence[EvalResult], verdicts: Mapping[str, Any], *, provider: str, model: str
) -> tuple[list[float], dict[int, str]]:
    """The scores :func:`batch_judge` gave, or would give, ``results`` from the verdicts
    it kept (its ``cache``: request key -> verdict) with a judge LLM of ``provider`` and
    ``model``, asking nothing: what a run stopped while judging has. NaN for a result
    with no prediction, or not judged yet (a verdict missing); the errors, by index, of
    the results whose judge could not score its verdicts (as :func:`batch_judge`)."""
    scores = [math.nan] * len(results)
    errors: dict[int, str] = {}
    for index, result in enumerate(results):
        if result.prediction is None:
            continue
        try:
            judge = _judge_of(result, OFFICIAL)
            keys = [_request_key(provider, model, r.text) for r in judge.requests(result)]
            if all(key in verdicts for key in keys):
                scores[index] = judge.score(result, [verdicts[key] for key in keys])
        except UnjudgeableError:
            continue  # a dataset without a judge: unjudged, as batch_judge leaves it
        except Exception as exc:  # a plug-in's judge is foreign code: this result's error
            errors[index] = f"{type(exc).__name__}: {exc}"
    return scores, errors


def _judge_of(result: EvalResult, prompt: str) -> Judge:
    benchmark = find_benchmark(result.dataset)
    if benchmark is None or (benchmark.judge is None and prompt == OFFICIAL):
        raise UnjudgeableError(f"not judged: dataset {result.dataset!r} has no judge")
    try:
        return get_judge_prompt(benchmark.name, prompt).judge
    except JudgePromptError as exc:
        raise UnjudgeableError(f"not judged: {exc}") from None


def offline_judge_responder(messages: list[ChatMessage]) -> str:
    """The loopback fake LLM's reply (a :class:`~himga.llm.Responder`) that speaks every
    registered benchmark's judge prompts (:mod:`himga.benchmarks._judge_prompts`): a
    request one of their judges made is answered by
    that judge's :meth:`~himga.benchmarks.Judge.offline_reply`, any other (an answer
    prompt) by :func:`himga.llm.offline_responder`.

    A judge of a plug-in older than :meth:`~himga.benchmarks.Judge.offline_reply`
    (not a :class:`~himga.benchmarks.Judge` at run time) is passed over, so its
    requests get no verdict and are counted as judge errors, never as scores.
    """
    text = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    every = (p.judge for name in benchmarks() for p in judge_prompts(name).values())
    judges = {id(judge): judge for judge in every if isinstance(judge, Judge)}
    for judge in judges.values():
        reply = judge.offline_reply(text)
        if reply is not None:
            return reply
    return offline_responder(messages)


@dataclass
class _Requests:
    """What judging ``results`` asks, before anything is asked: per result (by index) its
    judge and the cache key of each of its requests, in order (``plans``); each distinct
    request by key (``requests``; identical ones are asked once); the hash of every
    prompt template used (``used``); and the results that cannot be judged, with why
    (``errors``)."""

    plans: dict[int, tuple[Judge, list[str]]] = field(default_factory=dict)
    requests: dict[str, JudgeRequest] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)


def _requests(results: Sequence[EvalResult], llm: LLMClient, prompt: str) -> _Requests:
    """The requests of judging ``results`` with ``llm`` under the judge prompt ``prompt``."""
    found = _Requests()
    for index, result in enumerate(results):
        if result.prediction is None:
            found.errors[index] = (
                f"not judged: no prediction ({result.error or 'run without an LLM'})"
            )
            continue
        try:
            judge = _judge_of(result, prompt)
        except UnjudgeableError as exc:
            found.errors[index] = str(exc)
            continue
        try:
            # A plug-in's judge is foreign code: its failure is this question's error.
            asked = [(r, judge.prompts[r.prompt]) for r in judge.requests(result)]
        except Exception as exc:
            found.errors[index] = f"judge of {result.dataset!r} failed: {type(exc).__name__}: {exc}"
            continue
        keys = []
        for request, template in asked:
            found.used.update(prompt_hashes({request.prompt: template}))
            key = _cache_key(llm, request.text)
            found.requests.setdefault(key, request)
            keys.append(key)
        found.plans[index] = (judge, keys)
    return found


@dataclass(frozen=True)
class _Asker:
    """Asks judge requests of ``llm``, at most as many at once as ``slots`` lets, keeping
    each parsed verdict in ``cache`` and each failure in ``failures`` (by request key),
    and counting each request done on ``progress``."""

    llm: LLMClient
    cache: MutableMapping[str, Any]
    slots: asyncio.Semaphore
    progress: Any
    failures: dict[str, str] = field(default_factory=dict)

    async def ask(self, key: str, request: JudgeRequest, judge: Judge) -> None:
        """Ask ``request`` unless the cache has its verdict, and parse the reply with
        ``judge``; a failed call or an unparseable verdict is kept in ``failures``."""
        try:
            if key not in self.cache:
                async with self.slots:
                    completion = await self.llm.achat(
                        [{"role": "user", "content": request.text}],
                        max_tokens=request.max_tokens,
                    )
                try:
                    self.cache[key] = judge.parse(request, completion.text)
                except UnjudgeableError:
                    # An unusable reply must not be served again from the LLM cache.
                    if isinstance(self.llm, CachingLLMClient):
                        self.llm.forget(
                            [{"role": "user", "content": request.text}],
                            max_tokens=request.max_tokens,
                        )
                    raise
        except Exception as exc:  # a failed call or an unparseable verdict: an error
            self.failures[key] = f"{type(exc).__name__}: {exc}"
        finally:
            self.progress.update(1)


async def abatch_judge(
    results: Sequence[EvalResult],
    *,
    llm: LLMClient,
    cache: MutableMapping[str, Any] | None = None,
    show_progress: bool = True,
    max_concurrency: int | None = None,
    prompt: str = OFFICIAL,
) -> JudgeScores:
    """The coroutine behind :func:`batch_judge`, for callers already inside an event loop."""
    cache = {} if cache is None else cache
    found = _requests(results, llm, prompt)
    # The judge that parses a request's reply: a request asked by two results is one
    # request, of one judge (its key covers the text, which the judge's prompt made).
    owner = {key: judge for judge, keys in found.plans.values() for key in keys}
    limit = llm.max_concurrency if max_concurrency is None else max_concurrency
    if limit < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {limit}")
    # None: tqdm draws only on a terminal, so a log or a pipe gets no bar (as eval's).
    quiet = None if show_progress else True
    progress = tqdm(total=len(found.requests), disable=quiet, unit="q", desc="judge")
    asker = _Asker(llm, cache, asyncio.Semaphore(limit), progress)
    try:
        await asyncio.gather(
            *(asker.ask(key, request, owner[key]) for key, request in found.requests.items())
        )
    finally:
        progress.close()
    scores, errors = _scores(results, found, asker.failures, cache)
    temperature = llm.temperature if isinstance(llm, HasTemperature) else None
    return JudgeScores(
        scores,
        provider=llm.provider,
        model=llm.model,
        temperature=temperature if isinstance(temperature, (int, float)) else None,
        prompt_hashes=found.used,
        errors=errors,
        weights=llm.weights if isinstance(llm, HasWeights) else None,
    )


def _scores(
    results: Sequence[EvalResult],
    found: _Requests,
    failures: Mapping[str, str],
    cache: Mapping[str, Any],
) -> tuple[list[float], dict[int, str]]:
    """Each result's score from its judge's parsed verdicts (NaN when it has none), and
    the errors by index: those found before asking, then the first failed request of a
    result, or its judge's failure to score its verdicts."""
    scores = [math.nan] * len(results)
    errors = dict(found.errors)
    for index, (judge, keys) in found.plans.items():
        failed = [failures[key] for key in keys if key in failures]
        if failed:
            errors[index] = failed[0]
            continue
        parsed: list[JSONValue] = [cache[key] for key in keys]
        try:
            scores[index] = judge.score(results[index], parsed)
        except Exception as exc:  # a judge that cannot score its own verdicts: an error
            errors[index] = f"{type(exc).__name__}: {exc}"
    return scores, errors


def batch_judge(
    results: Sequence[EvalResult],
    *,
    llm: LLMClient,
    cache: MutableMapping[str, Any] | None = None,
    show_progress: bool = True,
    max_concurrency: int | None = None,
    prompt: str = OFFICIAL,
) -> JudgeScores:
    """Judge every result's prediction with ``llm``; scores aligned with ``results``.

    Each result is judged by its benchmark's judge prompt ``prompt`` (default: the
    official judge, module docstring; a benchmark without that prompt makes its
    results' errors). Calls run
    concurrently, at most ``max_concurrency`` (default: the client's) in flight.
    Identical requests (same provider, model and request text -- that is question,
    gold and prediction) are asked once; pass ``cache`` (any mutable mapping; it
    holds the *parsed* verdict per request) to also reuse verdicts across calls.
    """
    return asyncio.run(
        abatch_judge(
            results,
            llm=llm,
            cache=cache,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
            prompt=prompt,
        )
    )

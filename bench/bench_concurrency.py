"""Effective LLM concurrency of ``run_eval`` + ``batch_judge`` against its ceiling.

Run by hand (about a minute per round on 2 cores)::

    uv run python -m bench.bench_concurrency [--rounds 3] [--concurrency 32] [--latency 0.2]

A loopback :class:`~himga.testing.llm_server.FakeLLMServer` answers every
request after ``latency`` seconds. **Effective concurrency** of a phase is the
mean number of requests in flight, ``requests x latency / wall time``: the
latency-seconds the server delivered per second of wall time (faithful because
each request sleeps exactly ``latency`` on the server; HTTP overhead only makes
requests longer, which this measure does not credit).

Per round, against the same server with the same client settings:

1. **himga**: the seed example -- ``run_eval`` (NullMemory, all 1,986 LoCoMo
   questions) then ``batch_judge`` -- through ``get_client("anthropic")``;
2. **ceiling**: a bare asyncio loop of the same SDK (``anthropic.AsyncAnthropic``)
   sending as many requests with a semaphore of the same size: what the
   machine can do with that SDK, whose per-request CPU cost caps it on 2 cores;
3. **serial**: 20 requests one after another, for scale.

Prints each round and the medians; the target is himga >= 0.9 x ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from himga.agent import BaseAgent
from himga.data import load_dataset
from himga.eval import batch_judge, run_eval
from himga.llm import ChatMessage, get_client
from himga.memory import NullMemory
from himga.testing.llm_server import FakeLLMServer

_KEY = "bench-key"
_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:
        return '{"label": "CORRECT"}'
    if "Answer yes or no only." in prompt:
        return "yes"
    return "Not mentioned in the conversation"


def _measure(server: FakeLLMServer, phase: Callable[[], None]) -> tuple[float, int, float]:
    """Requests x latency / wall of ``phase``, with its request count and wall time."""
    server.reset_stats()
    started = time.perf_counter()
    phase()
    wall = time.perf_counter() - started
    requests = server.request_count
    return requests * server.latency / wall, requests, wall


def _himga(server: FakeLLMServer, concurrency: int) -> None:
    llm = get_client(
        "anthropic", base_url=server.anthropic_base_url, api_key=_KEY, max_concurrency=concurrency
    )
    agent = BaseAgent(memory=NullMemory(), llm=llm)
    results = run_eval(load_dataset("locomo"), agent=agent, show_progress=False)
    scores = batch_judge(results, llm=llm, show_progress=False)
    if len(results) != 1986 or scores.errors:
        raise RuntimeError("the benchmark run is incomplete: the numbers would be meaningless")


def _bare(server: FakeLLMServer, concurrency: int, requests: int) -> None:
    import anthropic

    async def main() -> None:
        client = anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key=_KEY, max_retries=0
        )
        slots = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with slots:
                await client.messages.create(
                    model="claude-haiku-4-5",
                    max_tokens=64,
                    messages=[{"role": "user", "content": f"question {i} Short answer:"}],
                )

        async with client:
            await asyncio.gather(*(one(i) for i in range(requests)))

    asyncio.run(main())


def _serial(server: FakeLLMServer, requests: int) -> None:
    import anthropic

    with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=_KEY) as client:
        for i in range(requests):
            client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": f"question {i} Short answer:"}],
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    os.environ.setdefault("HIMGA_DATA_DIR", str(_DATA))
    himga, ceiling, ratios = [], [], []
    with FakeLLMServer(responder=_responder, latency=args.latency, api_key=_KEY) as server:
        serial, _, _ = _measure(server, lambda: _serial(server, 20))
        for round_ in range(1, args.rounds + 1):
            ours, requests, wall = _measure(server, lambda: _himga(server, args.concurrency))
            bare, bare_requests, bare_wall = _measure(
                server, functools.partial(_bare, server, args.concurrency, requests)
            )
            himga.append(ours)
            ceiling.append(bare)
            ratios.append(ours / bare)
            print(
                f"round {round_}: himga {ours:.1f} in flight ({requests} requests, {wall:.1f} s); "
                f"ceiling {bare:.1f} ({bare_requests} requests, {bare_wall:.1f} s); "
                f"ratio {ours / bare:.2f}"
            )
    print(
        f"median over {args.rounds} rounds (concurrency {args.concurrency}, latency "
        f"{args.latency * 1000:.0f} ms): himga {statistics.median(himga):.1f}, ceiling "
        f"{statistics.median(ceiling):.1f}, ratio {statistics.median(ratios):.2f}; "
        f"serial loop {serial:.2f} ({serial / statistics.median(ceiling):.3f} x ceiling)"
    )


if __name__ == "__main__":
    main()

"""Effective LLM concurrency of ``run_eval`` + ``batch_judge`` against its ceiling.

Run by hand (about a minute per round on 2 cores)::

    uv run python -m bench.bench_concurrency [--rounds 3] [--concurrency 32] [--latency 0.2]

A loopback :class:`~himga.llm.FakeLLMServer` answers every
request after ``latency`` seconds. **Effective concurrency** of a phase is the
mean number of requests in flight on the server, ``in_flight_seconds / wall
time`` (the sum of every request's time in the server divided by the phase's
wall time). Also printed: the *useful* concurrency ``requests x latency / wall``,
which credits only the simulated model latency, not server-side overhead.

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
from dataclasses import dataclass
from pathlib import Path

from himga.agent import BaseAgent
from himga.benchmarks import load_dataset
from himga.eval import batch_judge, run_eval
from himga.llm import ChatMessage, FakeLLMServer, get_client
from himga.memory import NullMemory

_KEY = "bench-key"
_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def _responder(messages: list[ChatMessage]) -> str:
    prompt = messages[-1]["content"]
    if "Generated answer:" in prompt:
        return '{"label": "CORRECT"}'
    if "Answer yes or no only." in prompt:
        return "yes"
    return "Not mentioned in the conversation"


@dataclass(frozen=True)
class Phase:
    """One measured phase: mean requests in flight, useful concurrency, requests, wall time."""

    in_flight: float
    useful: float
    requests: int
    wall: float

    def __str__(self) -> str:
        return (
            f"{self.in_flight:.1f} in flight (useful {self.useful:.1f}; "
            f"{self.requests} requests in {self.wall:.1f} s)"
        )


def _measure(server: FakeLLMServer, phase: Callable[[], None]) -> Phase:
    server.reset_stats()
    started = time.perf_counter()
    phase()
    wall = time.perf_counter() - started
    requests = server.request_count
    return Phase(server.in_flight_seconds / wall, requests * server.latency / wall, requests, wall)


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
    himga: list[Phase] = []
    ceiling: list[Phase] = []
    with FakeLLMServer(responder=_responder, latency=args.latency, api_key=_KEY) as server:
        serial = _measure(server, lambda: _serial(server, 20))
        print(f"serial: {serial}")
        for round_ in range(1, args.rounds + 1):
            ours = _measure(server, lambda: _himga(server, args.concurrency))
            bare = _measure(
                server, functools.partial(_bare, server, args.concurrency, ours.requests)
            )
            himga.append(ours)
            ceiling.append(bare)
            print(f"round {round_}: himga {ours}; ceiling {bare}")

    def median(phases: list[Phase], field: str) -> float:
        return statistics.median(float(getattr(p, field)) for p in phases)

    ratio = statistics.median(
        o.in_flight / c.in_flight for o, c in zip(himga, ceiling, strict=True)
    )
    useful = statistics.median(o.useful / c.useful for o, c in zip(himga, ceiling, strict=True))
    print(
        f"medians over {args.rounds} rounds (concurrency {args.concurrency}, latency "
        f"{args.latency * 1000:.0f} ms): himga {median(himga, 'in_flight'):.1f} in flight, "
        f"ceiling {median(ceiling, 'in_flight'):.1f}, ratio {ratio:.2f} "
        f"(useful-concurrency ratio {useful:.2f}); serial loop {serial.in_flight:.2f} "
        f"= {serial.in_flight / median(ceiling, 'in_flight'):.3f} x ceiling"
    )


if __name__ == "__main__":
    main()

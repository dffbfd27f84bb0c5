"""Wall time of a MAGMA build over one LoCoMo conversation: concurrent vs serial, and cached.

Run by hand (about four minutes on 2 cores, most of it the serial baseline)::

    HIMGA_DATA_DIR=../shared/datasets uv run python -m bench.bench_magma \
        [--sample 0] [--latency 0.2] [--concurrency 32] [--rounds 3]

A loopback :class:`~himga.llm.FakeLLMServer` answers every
request after ``latency`` seconds with the scripted extraction model of
``tests/magma_support.py``. In the same run, against the same server:

1. **concurrent**: ``MagmaMemory(llm)`` (``rounds`` times; median), requests
   bounded by ``concurrency``;
2. **serial**: the same build with ``concurrency=1`` -- one request at a time,
   what a per-turn loop of blocking calls costs (once);
3. **cached**: two builds through ``get_client(cache=...)``: the second must
   send no request;
4. **paper**: ``MagmaPaperMemory(llm)``, for the cost of the causal slow path;
5. **eval**: ``himga eval --memory magma --llm anthropic --limit 1 --llm-cache F``
   twice (fresh ``--out`` each time), the second answered entirely from the cache.

Prints requests and tokens per conversation (the fake server counts a word as a
token), the wall times, their ratio and the ideal ``requests x latency /
concurrency``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.magma_support import magma_responder

from himga._cli import main as cli_main
from himga.benchmarks import load_dataset
from himga.data import Sample
from himga.llm import FakeLLMServer, SDKClient, get_client
from himga.memory import MagmaMemory, MagmaPaperMemory

_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def _build(memory: MagmaMemory, sample: Sample) -> float:
    for session, message in sample.iter_turns():
        memory.ingest(message, session)
    started = time.perf_counter()
    memory.retrieve("What did they talk about?")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="LoCoMo conversation (0-9)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-serial", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HIMGA_DATA_DIR", str(_DATA))
    sample = load_dataset("locomo")[args.sample]
    turns = sum(len(s.messages) for s in sample.sessions)
    print(f"{sample.sample_id}: {turns} turns, {len(sample.sessions)} sessions")
    with FakeLLMServer(responder=magma_responder, latency=args.latency) as server:

        def client(cache: Path | None = None) -> SDKClient:
            return get_client(
                "anthropic",
                api_key="bench",
                base_url=server.base_url,
                max_concurrency=args.concurrency,
                cache=cache,
            )

        walls = []
        for _ in range(args.rounds):
            server.reset_stats()
            memory = MagmaMemory(client())
            wall = _build(memory, sample)
            walls.append(wall)
            requests, in_flight = server.request_count, server.in_flight_seconds
            stats = memory.build_stats
            print(
                f"concurrent: {wall:6.2f} s  requests {requests}  max in flight "
                f"{server.max_in_flight}  effective concurrency {in_flight / wall:.1f}  "
                f"tokens in/out {stats.input_tokens}/{stats.output_tokens}  "
                f"malformed {stats.malformed_replies} degraded {stats.degraded_turns}"
            )
        concurrent = statistics.median(walls)
        ideal = requests * args.latency / args.concurrency
        print(f"concurrent median {concurrent:.2f} s; ideal requests x latency / c = {ideal:.2f} s")
        if not args.skip_serial:
            server.reset_stats()
            serial = _build(MagmaMemory(client(), concurrency=1), sample)
            print(
                f"serial:     {serial:6.2f} s  requests {server.request_count}  "
                f"(requests x latency = {server.request_count * args.latency:.1f} s)"
            )
            print(f"speed-up concurrent vs serial: {serial / concurrent:.1f}x")
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "llm.sqlite"
            for run in ("cold", "warm"):
                server.reset_stats()
                llm = client(cache)
                wall = _build(MagmaMemory(llm), sample)
                cached = llm.cache_stats
                assert cached is not None
                print(
                    f"cache {run}: {wall:6.2f} s  requests sent {server.request_count}  "
                    f"hits {cached.hits}  misses {cached.misses}"
                )
        server.reset_stats()
        paper = MagmaPaperMemory(client())
        wall = _build(paper, sample)
        print(
            f"magma-paper: {wall:6.2f} s  requests {server.request_count}  causal links "
            f"{paper.build_stats.causal_links}  tokens in/out "
            f"{paper.build_stats.input_tokens}/{paper.build_stats.output_tokens}"
        )
        _eval_twice(server)


def _eval_twice(server: FakeLLMServer) -> None:
    os.environ["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
    os.environ["ANTHROPIC_API_KEY"] = "bench"
    with tempfile.TemporaryDirectory() as tmp:
        for run in ("first", "second"):
            server.reset_stats()
            out = Path(tmp) / run
            argv = ["eval", "--memory", "magma", "--llm", "anthropic", "--limit", "1"]
            argv += ["--llm-cache", str(Path(tmp) / "llm.sqlite"), "--out", str(out)]
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli_main([*argv, "--no-progress"]) == 0
            wall = time.perf_counter() - started
            manifest = json.loads((out / "manifest.json").read_text("utf-8"))
            print(
                f"himga eval ({run} run): {wall:6.2f} s  requests sent {server.request_count}  "
                f"max in flight {server.max_in_flight}  cache {manifest['llm']['cache']}  "
                f"client usage {manifest['tokens']['client_usage_this_invocation']}"
            )


if __name__ == "__main__":
    main()

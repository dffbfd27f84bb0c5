"""``himga fake-llm``: serve the loopback Anthropic / OpenAI-compatible fake LLM until stopped."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``fake-llm`` subcommand."""
    parser = commands.add_parser(
        "fake-llm",
        help="serve a loopback fake LLM (Anthropic and OpenAI APIs) to try the LLM path offline",
        description=(
            "Serve himga.llm.FakeLLMServer on 127.0.0.1 with the offline "
            "responder: answers are the first line of the retrieved context, judge verdicts "
            "come from word overlap with the gold answer, never from text of the prompt. "
            "Prints the base URLs to export, then serves until interrupted (Ctrl-C, SIGTERM)."
        ),
    )
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    parser.add_argument(
        "--latency", type=float, default=0.0, metavar="S", help="seconds before each reply"
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        metavar="R",
        help="share of requests failing with 429 / 500 / 529 (seeded; default 0)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; 0 then, 2 on a bad option or a busy port."""
    from himga.llm import FakeLLMServer, offline_responder

    try:
        server = FakeLLMServer(
            responder=offline_responder,
            latency=args.latency,
            fault_rate=args.fault_rate,
            seed=args.seed,
            port=args.port,
        )
        server.start()
    except (ValueError, OSError) as exc:
        print(f"himga fake-llm: error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"fake LLM serving on {server.base_url} (Ctrl-C to stop); in another shell:")
    print(f"  export ANTHROPIC_BASE_URL={server.anthropic_base_url} ANTHROPIC_API_KEY=fake")
    print(f"  export OPENAI_BASE_URL={server.openai_base_url} OPENAI_API_KEY=fake")
    sys.stdout.flush()
    try:
        stop.wait()
    finally:
        server.stop()
    print(f"stopped after {server.request_count} requests")
    return 0

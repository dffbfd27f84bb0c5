"""``himga fake-llm``: serve the loopback Anthropic / OpenAI-compatible fake LLM until stopped."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from typing import Any

from himga._registry import cwd_importable

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add the ``fake-llm`` subcommand."""
    parser = commands.add_parser(
        "fake-llm",
        help="serve a loopback fake LLM (Anthropic and OpenAI APIs) to try the LLM path offline",
        description=(
            "Serve himga.llm.FakeLLMServer on 127.0.0.1 with the offline "
            "responder: answers are the first line of the retrieved context; each registered "
            "benchmark's judge gives its verdicts (Judge.offline_reply: word overlap with the "
            "gold answer, never text of the prompt). "
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
    parser.add_argument(
        "--responder",
        metavar="MODULE:ATTR",
        default=None,
        help="answer with this himga.llm.Responder instead (a callable taking the "
        "ChatRequest, returning str or Reply; the module importable from the current "
        "directory), e.g. to script JSON or tool-call replies",
    )
    parser.set_defaults(handler=run)


def _load(spec: str) -> Any:
    """The callable ``module:attr`` names, resolved as ``himga check`` resolves memories."""
    module_name, _, attr = spec.partition(":")
    if not attr or not all(part.isidentifier() for part in module_name.split(".")):
        raise ValueError(f"--responder {spec!r}: expected MODULE:ATTR, the module importable")
    cwd_importable()
    try:
        loaded: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            loaded = getattr(loaded, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--responder {spec!r}: {exc}") from exc
    if not callable(loaded):
        raise ValueError(f"--responder {spec!r}: {loaded!r} is not callable")
    return loaded


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; 0 then, 2 on a bad option or a busy port."""
    from himga.eval.judge import offline_judge_responder
    from himga.llm import FakeLLMServer

    try:
        responder = offline_judge_responder if args.responder is None else _load(args.responder)
        server = FakeLLMServer(
            responder=responder,
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

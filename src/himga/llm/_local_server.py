"""A GGUF model served on loopback by ``python -m llama_cpp.server``, for as long as himga runs.

:func:`serve` returns the running server of a model file and settings, starting
it on first use: one server per (file, threads, context, seed) per process,
shared by every client of that process (the answerer, the judge, an LLM-built
memory). Each starts on a free loopback port under a watchdog
(:mod:`himga.llm._watchdog`) in a session of its own, so a Ctrl-C in the terminal
reaches himga, not the server, and the server never outlives himga: it is
stopped at interpreter exit, and the watchdog stops it when himga dies by a
signal, ``kill -9`` included. A server is ready once it lists the model under its
alias (so a foreign server that took the port is never mistaken for it); one
that exits first -- a file the runtime cannot load -- is reported with its last
lines of output.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from himga._extras import MissingExtraError
from himga.llm import _watchdog
from himga.llm._gguf import LocalModelError
from himga.llm._watchdog import STOP_GRACE

__all__ = [
    "RUNTIME",
    "STARTUP_DEADLINE",
    "LocalServer",
    "ServerSettings",
    "runtime_version",
    "serve",
    "stop_all",
]

#: The distribution that serves local models.
RUNTIME: Final = "llama-cpp-python"
#: Seconds a server has to load its model and answer, before it is given up on.
STARTUP_DEADLINE: Final = 300.0
# The runtime's module and its server's dependencies (the ``server`` extra).
_MODULES: Final = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
# Environment variables the server reads as settings (pydantic-settings matches field
# names case-insensitively; HOST and PORT even override its arguments): kept from it,
# so what the server loads and where it listens is exactly what himga asked for.
# tests/llm/test_llm_local.py checks this covers every setting of the installed runtime.
SERVER_SETTINGS_ENV: Final = frozenset(
    {
        "api_key", "cache", "cache_size", "cache_type", "chat_format", "chat_template_kwargs",
        "clip_model_path", "config_file", "disable_ping_events", "draft_model",
        "draft_model_num_pred_tokens", "embedding", "flash_attn", "hf_model_repo_id",
        "hf_pretrained_model_name_or_path", "hf_tokenizer_config_path", "host",
        "interrupt_requests", "kv_overrides", "last_n_tokens_size", "logits_all", "lora_base",
        "lora_path", "main_gpu", "model", "model_alias", "models", "mul_mat_q", "n_batch",
        "n_ctx", "n_gpu_layers", "n_threads", "n_threads_batch", "n_ubatch", "numa",
        "offload_kqv", "port", "root_path", "rope_freq_base", "rope_freq_scale",
        "rope_scaling_type", "rpc_servers", "seed", "split_mode", "ssl_certfile",
        "ssl_keyfile", "tensor_split", "type_k", "type_v", "use_mlock", "use_mmap", "verbose",
        "vocab_only", "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow",
        "yarn_ext_factor", "yarn_orig_ctx",
    }
)  # fmt: skip
_TAIL_LINES = 3
_PORT_ATTEMPTS = 3


def runtime_version() -> str:
    """The installed runtime's version; :class:`MissingExtraError` naming the extra if it
    (or a dependency of its server) is not installed. Nothing is imported."""
    for module in _MODULES:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(
                f"the local provider needs {RUNTIME}[server] (module {module!r} is not "
                "installed): pip install 'himga[local]'"
            )
    return importlib.metadata.version(RUNTIME)


@dataclass(frozen=True)
class ServerSettings:
    """What a server is started with: the model file (absolute), the CPU ``threads`` it
    computes with (prompt and generation alike), its ``context`` window in tokens, and
    its sampling ``seed``."""

    model: Path
    threads: int
    context: int
    seed: int

    def command(self, port: int) -> list[str]:
        """The server's command line: loopback only, this model under its own path."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model", str(self.model),
            "--model_alias", str(self.model),
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads),
            "--n_ctx", str(self.context),
            "--seed", str(self.seed),
            "--verbose", "False",
        ]  # fmt: skip


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in SERVER_SETTINGS_ENV}
    # No download, whatever the runtime's libraries would try: the file is local.
    env["HF_HUB_OFFLINE"] = "1"
    return env


class LocalServer:
    """One running server (see the module docstring); :meth:`stop` ends it."""

    def __init__(
        self, settings: ServerSettings, *, startup_deadline: float = STARTUP_DEADLINE
    ) -> None:
        self.settings = settings
        self._owner = os.getpid()
        # The server's output, read back when it fails; open as long as this object lives.
        self._log: IO[bytes] = tempfile.TemporaryFile(prefix="himga-local-llm-")  # noqa: SIM115
        for _attempt in range(_PORT_ATTEMPTS):
            self.port = _free_port()
            self._watchdog = subprocess.Popen(
                # Run as a file: standard library only, so it starts without importing himga.
                [sys.executable, _watchdog.__file__, *settings.command(self.port)],
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=self._log,
                env=_environment(),
                start_new_session=True,  # Ctrl-C in the terminal is himga's to handle
            )
            try:
                self._await_ready(startup_deadline)
                return
            except LocalModelError:
                self.stop()
                if "address already in use" not in self._tail().lower():
                    raise
        raise LocalModelError(f"no free loopback port for the model server of {settings.model}")

    @property
    def base_url(self) -> str:
        """The server's OpenAI-compatible endpoint."""
        return f"http://127.0.0.1:{self.port}/v1"

    def running(self) -> bool:
        """Whether the server (its watchdog) is still running."""
        return self._watchdog.poll() is None

    def _tail(self) -> str:
        self._log.seek(0)
        lines = self._log.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(line.strip() for line in lines[-_TAIL_LINES:] if line.strip())

    def _serves_model(self) -> bool:
        import urllib.request  # here: importing himga.llm should not pay for http.client

        # No proxy: the server is on this machine, whatever HTTP_PROXY says.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(f"{self.base_url}/models", timeout=5) as reply:
                listed = json.load(reply)
        except (OSError, ValueError):
            return False
        models = listed.get("data") if isinstance(listed, dict) else None
        ids = {m.get("id") for m in models or [] if isinstance(m, dict)}
        return str(self.settings.model) in ids

    def _await_ready(self, deadline: float) -> None:
        model = self.settings.model
        until = time.monotonic() + deadline
        while True:
            status = self._watchdog.poll()
            if status is not None:
                raise LocalModelError(
                    f"the {RUNTIME} server could not load {model} (exit status {status}): "
                    f"{self._tail() or 'no output'}"
                )
            if self._serves_model():
                return
            if time.monotonic() > until:
                self.stop()
                raise LocalModelError(
                    f"the {RUNTIME} server of {model} did not answer within {deadline:g} s: "
                    f"{self._tail() or 'no output'}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server and its watchdog; waits until both have exited. Idempotent; a
        process that forked from the one that started it (it inherits this object) does
        nothing."""
        if os.getpid() != self._owner:
            return
        watchdog = self._watchdog
        if watchdog.stdin is not None and not watchdog.stdin.closed:
            with contextlib.suppress(OSError):
                watchdog.stdin.close()  # end of file: the watchdog stops the server
        try:
            watchdog.wait(STOP_GRACE + 2)
        except subprocess.TimeoutExpired:
            # The watchdog leads the session's process group: the server is in it too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(watchdog.pid, signal.SIGKILL)
            watchdog.wait()


_lock = threading.Lock()
_servers: dict[ServerSettings, LocalServer] = {}
_stop_at_exit = threading.Event()


def serve(settings: ServerSettings) -> LocalServer:
    """The running server of ``settings`` in this process, started if there is none (or
    the last one stopped). Raises :class:`LocalModelError` when it cannot start."""
    with _lock:
        server = _servers.get(settings)
        if server is None or not server.running():
            if not _stop_at_exit.is_set():
                _stop_at_exit.set()
                atexit.register(stop_all)
            server = _servers[settings] = LocalServer(settings)
        return server


def stop_all() -> None:
    """Stop every server this process started (run at interpreter exit)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()

"""Every LLM call ends within its deadline, whatever the server does (issue 26)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga.llm import ChatMessage, FakeLLMServer, LLMError, SDKClient, get_client
from tests.cli_support import QUICK, cwd, offline_cli, run_cli

PROVIDERS = ["anthropic", "openai"]
# Long enough that, were the drip not cut off, the call would get its reply and
# the test would fail on the missing LLMError instead of hanging.
DRIP_SECONDS = 20.0


class DrippingServer:
    """Accepts connections and answers each one a byte of a valid reply every 50 ms.

    Every single read the client makes gets data well within its read timeout,
    so only a deadline on the whole call can end it. ``attempts`` counts requests.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self.attempts = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        body = b'{"error": {"message": "late", "type": "server_error"}}'
        reply = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: %d\r\n\r\n%s" % (
            len(body),
            body,
        )
        with connection:
            connection.recv(65536)
            self.attempts += 1
            pause = DRIP_SECONDS / len(reply)
            for i in range(len(reply)):
                if self._stop.wait(pause):
                    return
                try:
                    connection.sendall(reply[i : i + 1])
                except OSError:  # the client hung up: the deadline fired
                    return

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.fixture
def dripping() -> Iterator[DrippingServer]:
    server = DrippingServer()
    yield server
    server.close()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["chat", "achat"])
def test_a_dripping_server_is_cut_off_at_the_deadline(
    provider: str, mode: str, dripping: DrippingServer
) -> None:
    url = dripping.url + ("/v1" if provider == "openai" else "")
    client = get_client(provider, api_key="k", base_url=url, max_retries=1, timeout=0.4)
    assert client.deadline == pytest.approx(0.4 * 2 + 0.5 + 1)
    error = _call(client, mode)
    assert "no complete reply within its deadline of 2.3 s" in str(error)
    assert error.status_code is None
    assert dripping.attempts == 1  # the drip never failed, so it was never retried
    assert client.usage.failed_calls == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["chat", "achat"])
def test_a_long_retry_after_does_not_outlast_the_deadline(provider: str, mode: str) -> None:
    # Both SDKs honour a retry-after of 100 s (anthropic's any length): without the
    # deadline this call would sleep that long before its retry.
    with FakeLLMServer(faults=[529, 529], retry_after_ms=100_000) as server:
        url = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
        client = get_client(provider, api_key="k", base_url=url, max_retries=1, timeout=0.4)
        error = _call(client, mode)
        assert "no complete reply within its deadline" in str(error)
        assert server.request_count == 1


def _call(client: SDKClient, mode: str) -> LLMError:
    messages: list[ChatMessage] = [{"role": "user", "content": "hello"}]

    def call() -> object:
        return client.chat(messages) if mode == "chat" else asyncio.run(client.achat(messages))

    with pytest.raises(LLMError) as info:
        call()
    return info.value


def test_the_cli_sets_the_timeout_and_retries_and_a_dripping_llm_is_an_llm_error(
    dripping: DrippingServer, tmp_path: Path
) -> None:
    with offline_cli(tmp_path) as patch, cwd(tmp_path):
        patch.setenv("ANTHROPIC_BASE_URL", dripping.url)
        argv = ["eval", *QUICK, "--llm", "anthropic", "--no-judge", "--limit", "1"]
        code, stderr = run_cli([*argv, "--llm-timeout", "0.3", "--llm-retries", "0"])
        assert code == 3, stderr
        assert "no complete reply within its deadline of 1.3 s" in stderr
        assert dripping.attempts == 3  # one per question, none retried
        manifest = json.loads((next(Path("runs").iterdir()) / "manifest.json").read_text())
        assert manifest["llm"]["max_retries"] == 0


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--llm-timeout", "1"], "--llm-timeout needs --llm"),
        (["--llm", "anthropic", "--llm-retries", "-1"], "--llm-retries must be >= 0"),
        (["--llm", "anthropic", "--llm-timeout", "inf"], "must be a number of seconds > 0"),
        (["--llm", "anthropic", "--llm-timeout", "0"], "must be a number of seconds > 0"),
    ],
)
def test_bad_llm_timeout_and_retries_are_usage_errors(
    tmp_path: Path, options: list[str], problem: str
) -> None:
    with offline_cli(tmp_path), cwd(tmp_path):
        code, stderr = run_cli(["eval", *QUICK, *options])
    assert code == 2
    assert problem in stderr.strip().splitlines()[-1]

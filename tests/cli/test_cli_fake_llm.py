"""``himga fake-llm``: bad options are one-line errors with exit status 2."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from himga._cli import main
from himga.llm import FakeLLMServer


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_a_one_line_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fake-llm", "--port", port]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"himga fake-llm: error: port must be in 0-65535 (0: any free port), got {int(port)}"
    ]


def test_a_busy_port_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["fake-llm", "--port", str(port)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("himga fake-llm: error: ")


def test_the_library_refuses_the_port_before_binding() -> None:
    with pytest.raises(ValueError, match="port must be in 0-65535"):
        FakeLLMServer(port=70000)


@pytest.mark.integration
def test_a_responder_module_answers_in_place_of_the_offline_one(tmp_path: Path) -> None:
    (tmp_path / "scripted_llm.py").write_text(
        "import json\n"
        "def facts(request):\n"
        "    return json.dumps({'facts': [request[-1]['content']]})\n"
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "himga",
            "fake-llm",
            "--port",
            "0",
            "--responder",
            "scripted_llm:facts",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().split()[4]
        client = openai.OpenAI(api_key="fake", base_url=base_url + "/v1", max_retries=0)
        reply = client.chat.completions.create(
            model="fake",
            messages=[{"role": "user", "content": "json please: I live in Oslo"}],
            response_format={"type": "json_object"},
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    assert json.loads(reply.choices[0].message.content or "") == {
        "facts": ["json please: I live in Oslo"]
    }


@pytest.mark.parametrize("spec", ["nosuchmodule_x:f", "json:no_such_function", "../x:f", "json"])
def test_a_responder_that_cannot_be_loaded_is_a_one_line_error(
    spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fake-llm", "--port", "0", "--responder", spec]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"himga fake-llm: error: --responder {spec!r}")


@pytest.mark.parametrize("latency", ["1e308", "inf", "nan", "-1", "86401"])
def test_a_latency_out_of_range_is_a_one_line_error(
    latency: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1e308 used to be accepted and overflow the serving thread's wait at the first request.
    with pytest.raises(ValueError, match="latency must be in"):
        FakeLLMServer(latency=float(latency))
    assert main(["fake-llm", "--port", "0", "--latency", latency]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"himga fake-llm: error: latency must be in [0, 86400] seconds, got {float(latency)!r}"
    ]
    with pytest.raises(ValueError, match="retry_after_ms must be None or in"):
        FakeLLMServer(retry_after_ms=float(latency) * 1000)

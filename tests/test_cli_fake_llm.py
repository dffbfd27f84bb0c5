"""``himga fake-llm``: bad options are one-line errors with exit status 2."""

from __future__ import annotations

import socket

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

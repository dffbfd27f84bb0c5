"""MCP memory servers through himga: the real reference server over stdio, a server over
streamable HTTP, configuration errors, provenance to the turn, offline."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga._cli import main
from himga.data.schema import Message
from himga.integrations import IntegrationConfigError, IntegrationError, MCPMemory
from himga.integrations import _mcp as mcp_adapter
from himga.memory import SearchableMemory, load_memory
from himga.testing import check_memory
from tests.data_fixtures import write_json
from tests.integration_support import LOCOMO, SESSION, TURNS

# Every test here may start the pinned npm server (the preset's default), which the
# suite installs itself (the `mcp_node` fixture, tests/mcp_node.py).
pytestmark = pytest.mark.usefixtures("loopback_only", "mcp_node")


@pytest.mark.slow
def test_reference_server_passes_the_kit() -> None:
    check_memory(MCPMemory, max_examples=25)


def test_questions_find_turns_term_by_term_with_their_ids() -> None:
    memory = MCPMemory(k=2)
    assert isinstance(memory, SearchableMemory)
    for turn in TURNS:
        memory.ingest(turn, SESSION)
    hits = memory.search("Who knocked over the painting?", 5)
    assert hits[0].turn_id == "D1:2"
    assert hits[0].text == f"[{SESSION.date_str}] Melanie: {TURNS[1].content}"
    assert hits[0].derived_from == ()
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    # "Caroline" matches two turns, "pottery" one: the rarer term decides
    assert [hit.turn_id for hit in memory.search("Caroline pottery", 5)] == ["D1:3", "D1:1"]
    assert memory.retrieve("the pottery class").splitlines() == [
        f"[{SESSION.date_str}] Caroline: {TURNS[2].content}"
    ]
    # the server alone matches the whole question as one substring: nothing
    whole = MCPMemory(split_query=False)
    for turn in TURNS:
        whole.ingest(turn, SESSION)
    assert whole.search("Who knocked over the painting?", 5) == []
    assert [hit.turn_id for hit in whole.search("painting", 5)] == ["D1:2"]


def test_instances_share_the_server_but_not_their_turns_and_reset_deletes() -> None:
    first, second = MCPMemory(), MCPMemory()
    first.ingest(TURNS[1], SESSION)
    second.ingest(Message("Bob", "My cat sleeps all day.", "D1:1"), SESSION)
    assert [hit.turn_id for hit in first.search("cat", 5)] == ["D1:2"]
    assert [hit.turn_id for hit in second.search("cat", 5)] == ["D1:1"]
    session = mcp_adapter._POOL.get(first._server, first.timeout)

    def names() -> set[str]:
        graph = session.call("read_graph", {}).structured_content
        return {entity["name"] for entity in graph["entities"]}

    held = names()
    first.reset()
    assert first.search("cat", 5) == []
    assert len(held - names()) == 1  # the reset deleted its own entity on the server, only it
    assert [hit.turn_id for hit in second.search("cat", 5)] == ["D1:1"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """tests/mcp_http_server.py on a free loopback port; its streamable HTTP URL."""
    port = _free_port()
    script = Path(__file__).parents[1] / "mcp_http_server.py"
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(300):
            if process.poll() is not None:
                pytest.fail(f"the HTTP MCP server exited: {process.stderr.read()!r}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        mcp_adapter._POOL.close()
        process.terminate()
        process.wait(10)


def test_streamable_http_transport(http_server: str) -> None:
    memory = MCPMemory(url=http_server)
    for turn in TURNS:
        memory.ingest(turn, SESSION)
    assert [hit.turn_id for hit in memory.search("Where did Caroline go hiking?", 2)] == [
        "D1:1",
        "D1:3",
    ]
    assert repr(memory).startswith(
        f"MCPMemory(k=10, preset='server-memory', server='{http_server}'"
    )
    memory.reset()
    assert memory.search("hiking", 5) == []
    broken = MCPMemory(url=http_server, search_tool="no_such_tool")
    broken.ingest(TURNS[0], SESSION)
    with pytest.raises(IntegrationError, match="no_such_tool"):
        broken.search("hiking", 5)


def test_settings_are_checked_before_any_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_memory("mcp") is MCPMemory
    with pytest.raises(
        IntegrationConfigError, match="missing settings: command \\(or url\\), ingest_tool"
    ):
        MCPMemory(preset=None)
    with pytest.raises(IntegrationConfigError, match="unknown preset 'nope'"):
        MCPMemory(preset="nope")
    with pytest.raises(IntegrationConfigError, match="ingest_args: bad placeholder"):
        MCPMemory(url="http://127.0.0.1:1/mcp", ingest_args={"x": "{speaker}"})
    with pytest.raises(IntegrationConfigError, match="reset_tool is given without reset_args"):
        MCPMemory(
            preset=None,
            url="http://127.0.0.1:1/mcp",
            ingest_tool="a",
            ingest_args={},
            search_tool="b",
            search_args={},
            results="r",
            key_field="k",
            text_field="t",
            reset_tool="c",
        )
    monkeypatch.setenv(mcp_adapter.NODE_DIR_ENV, str(tmp_path))
    with pytest.raises(IntegrationConfigError, match="npm ci --prefix integrations/mcp-node"):
        MCPMemory()


def test_a_server_that_cannot_start_is_an_error_naming_it() -> None:
    memory = MCPMemory(
        command=sys.executable, args=["-c", "import sys; sys.exit('no server here')"]
    )
    with pytest.raises(IntegrationError, match="no server here"):
        memory.ingest(TURNS[0], SESSION)
    missing = MCPMemory(command="no-such-command-himga")
    with pytest.raises(IntegrationError, match="not on PATH"):
        missing.ingest(TURNS[0], SESSION)


def test_a_key_or_text_field_the_results_lack_is_an_error_naming_it(http_server: str) -> None:
    for setting, field in (("key_field", "id"), ("text_field", "text")):
        memory = MCPMemory(url=http_server, **{setting: field})  # type: ignore[arg-type]
        memory.ingest(TURNS[0], SESSION)
        with pytest.raises(
            IntegrationError,
            match=f"no {setting} '{field}'; it holds 'name', 'entityType', 'observations'",
        ):
            memory.search("hiking", 5)
        memory.reset()


def test_a_server_printing_garbage_is_summarised_in_one_error_not_a_flood_of_tracebacks(
    capfd: pytest.CaptureFixture[str],
) -> None:
    garbage = (
        "import time\nfor i in range(500): print('garbage line', i, flush=True)\ntime.sleep(30)"
    )
    memory = MCPMemory(command=sys.executable, args=["-c", garbage], timeout=2)
    with pytest.raises(IntegrationError) as info:
        memory.ingest(TURNS[0], SESSION)
    message = str(info.value)
    assert "no MCP handshake in 2 s" in message
    assert re.search(r"could not read \d+ line\(s\) of its output, the first:", message)
    assert "input_value='garbage line 0'" in message
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert len(err) < 2000  # one line said once, not one traceback per line


def test_himga_eval_with_a_key_field_the_results_lack_fails_pre_flight_naming_it(
    http_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_json(tmp_path / "locomo.json", LOCOMO)
    argv = ["eval", "--dataset", "locomo", "--data-path", str(data), "--no-progress"]
    argv += ["--memory", "mcp", "--memory-arg", f"url={http_server}"]
    argv += ["--memory-arg", "key_field=id", "--out", str(tmp_path / "run")]
    assert main(argv) == 2  # was: pre-flight passed, exit 0, every recall 0.000
    assert "no key_field 'id'; it holds 'name', 'entityType', 'observations'" in (
        capsys.readouterr().err
    )

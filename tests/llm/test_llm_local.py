"""The local provider's checks and the life of its server (docs/llm.md, "Local models").

The file checks need no runtime; the server tests start the real runtime on the test
model (tests/local_model.py) and stop it every way himga can go: normal exit, Ctrl-C,
SIGTERM and SIGKILL, after which no server process may be left.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from himga._extras import MissingExtraError
from himga.agent import BaseAgent
from himga.eval import AgentSpec
from himga.eval._identity import run_identity
from himga.llm import LLMConfigError, LocalModelError, _gguf, _local_server, get_client
from himga.metering import ProxyCall, RunMeter
from tests.cli_support import QUICK, cwd, offline_cli, run_cli
from tests.eval.test_eval_support import RecordingMemory, ScriptedLLM
from tests.local_model import SMOLLM2_SHA256, require_local_runtime, smollm2_gguf

pytestmark = pytest.mark.usefixtures("loopback_only")

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The server tests find processes through /proc.
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture(autouse=True)
def hash_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The weights hash cache of the test, not the user's."""
    cache = tmp_path / "weights_sha256.json"
    monkeypatch.setenv(_gguf.HASH_CACHE_ENV, str(cache))
    monkeypatch.setattr(_gguf, "_known", {})
    return cache


@pytest.fixture
def model() -> Path:
    return smollm2_gguf()


@pytest.fixture
def servers() -> Iterator[None]:
    """Every server the test starts in this process is stopped after it."""
    yield
    _local_server.stop_all()


def _servers_of(model: Path) -> list[int]:
    """Live processes (not zombies) whose command line serves ``model``: watchdog and server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"llama_cpp.server" in command and str(model).encode() in command:
            found.append(int(entry.name))
    return found


def _gone(model: Path, within: float = 15.0) -> bool:
    until = time.monotonic() + within
    while _servers_of(model):
        if time.monotonic() > until:
            return False
        time.sleep(0.1)
    return True


# -- the file, before any runtime ------------------------------------------------------


def test_a_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(LocalModelError, match=r"model file .*nope\.gguf does not exist") as info:
        _gguf.check_gguf(missing)
    assert "\n" not in str(info.value)
    with pytest.raises(LocalModelError, match="is a directory"):
        _gguf.check_gguf(tmp_path)


def test_a_file_without_the_gguf_magic_is_refused_before_any_start(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 a zip, not weights")
    with pytest.raises(LocalModelError, match=r"is not a GGUF file \(it starts with b'PK"):
        _gguf.check_gguf(fake)
    fake.write_bytes(b"GGUF")
    assert _gguf.check_gguf(fake) == fake


def test_the_sha256_is_computed_once_per_path_size_and_mtime(
    tmp_path: Path, hash_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF" + b"\1" * 1000)
    expected = hashlib.sha256(file.read_bytes()).hexdigest()
    assert _gguf.gguf_sha256(file) == expected
    assert expected in hash_cache.read_text()
    # Same size and mtime, other bytes: the cached digest is believed, in this process
    # and (through the file) in the next one.
    stat = file.stat()
    file.write_bytes(b"GGUF" + b"\2" * 1000)
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _gguf.gguf_sha256(file) == expected
    monkeypatch.setattr(_gguf, "_known", {})
    assert _gguf.gguf_sha256(file) == expected
    # A new mtime is a new version of the file: hashed again.
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _gguf.gguf_sha256(file) == hashlib.sha256(file.read_bytes()).hexdigest() != expected
    hash_cache.write_text("{not json")  # a damaged cache only costs the hash again
    monkeypatch.setattr(_gguf, "_known", {})
    assert _gguf.gguf_sha256(file) == hashlib.sha256(file.read_bytes()).hexdigest()


def test_the_local_provider_needs_a_model_and_owns_its_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HIMGA_MODEL", raising=False)
    with pytest.raises(LLMConfigError, match="needs the path of a GGUF file"):
        get_client("local")
    with pytest.raises(LLMConfigError, match="threads: settings of the local provider, not openai"):
        get_client("openai", api_key="k", threads=2)
    with pytest.raises(LLMConfigError, match="context must be >= 1"):
        get_client("local", model="m.gguf", context=0)


def test_a_missing_runtime_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_runtime(name: str, *args: object) -> object:
        return None if name == "llama_cpp" else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", without_runtime)
    with pytest.raises(MissingExtraError, match=r"pip install 'himga\[local\]'"):
        get_client("local", model=str(tmp_path / "m.gguf"))


def test_himga_eval_says_what_is_wrong_with_the_model_in_one_line(tmp_path: Path) -> None:
    require_local_runtime()
    (tmp_path / "notes.gguf").write_text("not a model")
    with offline_cli(tmp_path), cwd(tmp_path):
        code, err = run_cli(["eval", *QUICK, "--llm", "local", "--model", "notes.gguf"])
        assert code == 2
        assert err.startswith("himga eval: error: model file ")
        assert "is not a GGUF file" in err
        assert err.count("\n") == 1
        assert "Traceback" not in err
        code, err = run_cli(["eval", *QUICK, "--llm", "openai", "--llm-threads", "2"])
        assert (code, err) == (2, "himga eval: --llm-threads needs --llm local\n")


class WeightedLLM(ScriptedLLM):
    """A client of a model file, as the local provider's (``HasWeights``)."""

    def __init__(self, sha256: str) -> None:
        super().__init__()
        self.weights = {"sha256": sha256, "runtime": "llama-cpp-python", "runtime_version": "9"}


def test_the_weights_are_part_of_the_run_identity() -> None:
    first = run_identity(BaseAgent(RecordingMemory(), WeightedLLM("a" * 64)))
    assert first.answer is not None
    assert first.answer["weights"]["sha256"] == "a" * 64
    other = run_identity(BaseAgent(RecordingMemory(), WeightedLLM("b" * 64)))
    assert other.fingerprint != first.fingerprint
    ours, theirs = '"' + "b" * 64 + '"', '"' + "a" * 64 + '"'
    assert other.differences(first) == [f"answer.weights.sha256: {ours} != {theirs}"]
    # Clients without a model file keep the identity they always had.
    plain = run_identity(BaseAgent(RecordingMemory(), ScriptedLLM()))
    assert plain.answer is not None
    assert "weights" not in plain.answer


# -- the server --------------------------------------------------------------------------


def test_the_runtime_settings_read_from_the_environment_are_all_withheld() -> None:
    require_local_runtime()
    from llama_cpp.server.settings import ConfigFileSettings, Settings

    fields = set(Settings.model_fields) | set(ConfigFileSettings.model_fields) | {"config_file"}
    assert fields <= _local_server.SERVER_SETTINGS_ENV


@pytest.mark.slow
@pytest.mark.integration
@linux_only
@pytest.mark.usefixtures("servers")
def test_a_corrupt_gguf_fails_with_the_servers_last_words_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\xff" * 4096)
    started = time.monotonic()
    with pytest.raises(LocalModelError, match=r"server could not load .*corrupt\.gguf") as info:
        get_client("local", model=str(corrupt))
    assert "\n" not in str(info.value)
    assert "Failed to load model" in str(info.value)
    assert time.monotonic() - started < 60
    assert _servers_of(corrupt) == []


@pytest.mark.slow
@pytest.mark.integration
@linux_only
@pytest.mark.usefixtures("servers")
def test_clients_of_one_file_share_one_server(model: Path) -> None:
    answerer = get_client("local", model=str(model))
    judge = get_client("local", model=str(model), max_tokens=5)
    assert answerer.base_url == judge.base_url
    assert len(_servers_of(model)) == 2  # one watchdog, one server
    reply = judge.chat([{"role": "user", "content": "Say yes."}])
    assert isinstance(reply, str)
    assert reply.strip()
    assert judge.usage.output_tokens <= 5
    _local_server.stop_all()
    assert _servers_of(model) == []


@pytest.mark.slow
@pytest.mark.integration
@linux_only
@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: signal.Signals(s).name
)
def test_no_server_outlives_himga(tmp_path: Path, model: Path, stop: signal.Signals) -> None:
    # A path of its own, so this test's processes are told apart from any other's.
    own = tmp_path / "own.gguf"
    own.symlink_to(model)
    env = {
        **os.environ,
        # What the runtime would otherwise read as its settings: ignored.
        "PORT": "1",
        "HOST": "0.0.0.0",
        "CONFIG_FILE": str(tmp_path / "missing.json"),
    }
    child = subprocess.Popen(
        [sys.executable, str(PROJECT_ROOT / "tests" / "local_server_child.py"), str(own)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), child.communicate(timeout=30)
        assert len(_servers_of(own)) == 2
        child.send_signal(stop)
        child.wait(30)
        assert _gone(own), f"server left running after {stop.name}: {_servers_of(own)}"
    finally:
        child.kill()
        child.communicate()


@pytest.mark.slow
@pytest.mark.integration
@linux_only
@pytest.mark.usefixtures("servers")
def test_a_spec_builds_the_metered_local_agent_anywhere_with_one_identity(model: Path) -> None:
    # What himga eval and each Ray worker do with the spec: build the agent through a
    # meter, whose answer proxy sits between the client and the server.
    spec = AgentSpec(memory="keyword", llm="local", model=str(model), llm_settings={"threads": 1})
    shipped = pickle.loads(pickle.dumps(spec))
    calls: list[ProxyCall] = []
    with RunMeter(calls.append) as meter:
        agent, _ = shipped.assemble(meter)
        assert agent.llm is not None
        with meter.answer_phase("answering"):
            assert agent.llm.chat([{"role": "user", "content": "Hi"}], max_tokens=3)
        meter.settle()
    assert [(c.phase, c.status) for c in calls] == [("answering", 200)]
    assert calls[0].output_tokens is not None
    assert 0 < calls[0].output_tokens <= 3
    identity = shipped.run_identity(agent)
    assert identity == spec.run_identity()  # built again, as another process would
    assert identity.answer is not None
    assert identity.answer["weights"]["sha256"] == SMOLLM2_SHA256

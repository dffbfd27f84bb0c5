"""The suite installs the pinned npm MCP server itself: ``uv run pytest`` on a fresh clone
needs no ``npm ci`` first (issue 34, item 2)."""

from __future__ import annotations

import json
import shutil
import stat
import threading
from pathlib import Path

import pytest

from himga.integrations import _mcp as mcp_adapter
from tests.mcp_node import MCP_NODE_DIR, NodeMissing, ensure_mcp_node, installed, require_mcp_node

# npm, node and their install: integration
pytestmark = [pytest.mark.usefixtures("loopback_only"), pytest.mark.integration]

# Stands in for npm: slow enough for callers to overlap, counts its runs, and leaves
# npm's record of an install as npm ci does (node_modules/.package-lock.json).
FAKE_NPM = """#!/bin/sh
for last; do :; done
sleep 0.3
echo "$@" >> "$last/npm-runs"
mkdir -p "$last/node_modules"
cp "$last/package-lock.json" "$last/node_modules/.package-lock.json"
"""


def _fresh_copy(tmp_path: Path) -> Path:
    """integrations/mcp-node as a fresh clone has it: package.json and the lock only."""
    copy = tmp_path / "mcp-node"
    copy.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(MCP_NODE_DIR / name, copy / name)
    return copy


def _fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("npm", FAKE_NPM), ("node", "#!/bin/sh\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")  # the fakes first


def test_concurrent_callers_run_npm_ci_once_and_again_when_the_lock_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _fresh_copy(tmp_path)
    _fake_tools(tmp_path, monkeypatch)
    assert not installed(copy)
    errors: list[BaseException] = []

    def install() -> None:
        try:
            ensure_mcp_node(copy)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=install) for _ in range(4)]  # as xdist workers
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    runs = (copy / "npm-runs").read_text().splitlines()
    assert runs == [f"ci --ignore-scripts --no-audit --no-fund --prefix {copy}"]
    assert installed(copy)
    ensure_mcp_node(copy)  # installed as pinned: nothing to do
    lock = copy / "package-lock.json"
    pinned = json.loads(lock.read_text("utf-8"))
    pinned["packages"]["node_modules/left-pad"] = {"version": "1.3.0"}
    lock.write_text(json.dumps(pinned), "utf-8")
    assert not installed(copy)
    ensure_mcp_node(copy)  # the pin moved: installed again
    assert len((copy / "npm-runs").read_text().splitlines()) == 2


@pytest.mark.usefixtures("mcp_node")  # npm's cache then holds the pinned packages
def test_a_fresh_copy_is_installed_from_its_lock_by_npm_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _fresh_copy(tmp_path)
    monkeypatch.setenv("npm_config_offline", "true")  # from npm's cache: nothing fetched
    ensure_mcp_node(copy)
    assert installed(copy)
    monkeypatch.setenv(mcp_adapter.NODE_DIR_ENV, str(copy))
    script = Path(mcp_adapter._server_memory_script())
    assert script.is_file()
    assert script.is_relative_to(copy / "node_modules")


def test_without_node_the_tests_fail_under_ci_and_skip_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _fresh_copy(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # neither node nor npm
    with pytest.raises(NodeMissing, match="node and npm not on PATH"):
        ensure_mcp_node(copy)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="node and npm not on PATH"):
        require_mcp_node(copy)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="node and npm not on PATH"):
        require_mcp_node(copy)

"""The pinned npm MCP server the adapter's tests run, installed by the suite itself.

``uv run pytest`` on a fresh clone is the whole set-up: the first test that needs
``integrations/mcp-node/node_modules`` runs ``npm ci`` there (the committed
``package-lock.json``), once, however many pytest-xdist workers ask at the same time.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = ["MCP_NODE_DIR", "NodeMissing", "ensure_mcp_node", "installed", "require_mcp_node"]

MCP_NODE_DIR = Path(__file__).resolve().parent.parent / "integrations" / "mcp-node"
#: What ``.ci/run`` runs: no install scripts, nothing reported home.
NPM_CI = ("ci", "--ignore-scripts", "--no-audit", "--no-fund")
_NPM_DEADLINE_S = 600


class NodeMissing(RuntimeError):
    """Node.js or npm is not on PATH: the MCP tests cannot run here."""


def _packages(lockfile: Path) -> Any:
    try:
        packages = json.loads(lockfile.read_text("utf-8"))["packages"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {name: entry for name, entry in packages.items() if name}  # "" is the root


def installed(directory: Path) -> bool:
    """Whether ``node_modules`` holds exactly what ``package-lock.json`` pins, by npm's own
    record of its last install (``node_modules/.package-lock.json``)."""
    pinned = _packages(directory / "package-lock.json")
    return pinned is not None and _packages(directory / "node_modules" / ".package-lock.json") == (
        pinned
    )


def ensure_mcp_node(directory: Path = MCP_NODE_DIR) -> None:
    """``npm ci`` in ``directory`` unless it is installed as pinned.

    An exclusive lock (a file in the temporary directory, named after ``directory``)
    makes concurrent callers -- pytest-xdist workers -- wait for the one that installs,
    then find it installed. Raises :class:`NodeMissing` without node or npm, and
    ``RuntimeError`` with npm's output when ``npm ci`` fails.
    """
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise NodeMissing(
            f"{' and '.join(missing)} not on PATH: the MCP adapter's tests need Node.js "
            f"to run the pinned server in {directory}"
        )
    tag = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"himga-mcp-node-{tag}.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        if installed(directory):
            return
        npm = shutil.which("npm") or "npm"
        done = subprocess.run(
            [npm, *NPM_CI, "--prefix", str(directory)],
            capture_output=True,
            text=True,
            timeout=_NPM_DEADLINE_S,
            check=False,
        )
        if done.returncode != 0 or not installed(directory):
            output = (done.stdout + done.stderr).strip()[-2000:]
            raise RuntimeError(f"npm ci in {directory} failed (exit {done.returncode}): {output}")


def require_mcp_node(directory: Path = MCP_NODE_DIR) -> None:
    """:func:`ensure_mcp_node` for a test: without node it fails under CI=true (a CI
    machine must run these tests) and skips elsewhere; a failing ``npm ci`` raises."""
    try:
        ensure_mcp_node(directory)
    except NodeMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))

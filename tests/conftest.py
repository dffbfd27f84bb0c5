"""Project-wide test configuration: Hypothesis profiles and the shared datasets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.browser import browser, chromium, offline_page
from tests.loopback_server import LoopbackServer
from tests.mcp_node import require_mcp_node
from tests.network_guard import loopback_only
from tests.view_support import make_runs

# the fixtures: `pytest.mark.usefixtures("loopback_only")`; the browser for the viewer's tests
__all__ = ["browser", "chromium", "loopback_only", "offline_page"]

# `dev` keeps the suite fast on a laptop; `ci` (chosen automatically under CI=true,
# or with HYPOTHESIS_PROFILE=ci) searches harder. The kit itself never loads a profile.
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev")
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"

#: Fixtures that reach ../shared, a browser, node or runs made by subprocesses: a test
#: using one, directly or through another fixture, is ``integration`` wherever it is.
INTEGRATION_FIXTURES = frozenset(
    {"shared_datasets", "shared_tier", "chromium", "mcp_node", "view_runs"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``integration`` the tests whose fixtures are in :data:`INTEGRATION_FIXTURES`."""
    for item in items:
        if isinstance(item, pytest.Function) and INTEGRATION_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def view_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs directory of ``himga eval`` runs, two judged and one killed half-way
    (:func:`tests.view_support.make_runs`); copy a run before changing it."""
    return make_runs(tmp_path_factory.mktemp("view-runs"))


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """``../shared/datasets`` (or ``$HIMGA_DATA_DIR``): fails under CI when missing, else skips."""
    root = Path(os.environ.get("HIMGA_DATA_DIR", SHARED_DATASETS))
    _required(root / "locomo" / "locomo10.json", "LoCoMo")
    return root


@pytest.fixture
def data_dir(shared_datasets: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``shared_datasets``, set as ``$HIMGA_DATA_DIR`` for the test."""
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    return shared_datasets


def _required(path: Path, what: str) -> None:
    """Fails under CI when ``path`` is missing, else skips."""
    if not path.is_file():
        message = f"the shared {what} data is missing: {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def shared_tier() -> Path:
    """``chats/100K`` of the shared BEAM copy: fails under CI when missing, else skips."""
    root = Path(os.environ.get("HIMGA_DATA_DIR") or SHARED_DATASETS) / "beam" / "chats" / "100K"
    _required(root / "1" / "chat.json", "BEAM")
    return root


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A :class:`LoopbackServer`, serving on a thread for the test."""
    served = LoopbackServer()
    served.service.start()
    yield served
    served.service.stop()


@pytest.fixture(scope="session")
def mcp_node() -> None:
    """The pinned npm MCP server in ``integrations/mcp-node``, installed by ``npm ci`` on
    first use; without node, fails under CI=true and skips elsewhere (tests/mcp_node.py)."""
    require_mcp_node()

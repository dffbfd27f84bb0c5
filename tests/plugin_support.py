"""Installing a benchmark plug-in at test time: a distribution (a dist-info with entry
points, and optionally a module beside it) in a directory put on ``sys.path``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from himga.benchmarks import _registry

PLUGIN = "toyqa-plugin"


def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh directory on ``sys.path`` for :func:`install_plugin`, plug-ins enabled,
    no broken plug-in said yet, and registrations kept to the test."""
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.delenv("HIMGA_NO_PLUGINS", raising=False)
    monkeypatch.setattr(_registry, "_warned", set(), raising=False)
    # a plug-in's registration stays here
    monkeypatch.setattr(_registry._benchmarks.registered, "entries", {})
    return directory


def plugin_module(site: Path, dist: str = PLUGIN) -> str:
    """The name of the module :func:`install_plugin` writes for ``dist`` (unique per
    test, so no test finds another's in ``sys.modules``)."""
    return f"{site.parent.name}_{dist.replace('-', '_')}"


def install_plugin(site: Path, entry_points: str, module: str = "", *, dist: str = PLUGIN) -> None:
    """Install ``dist`` into ``site`` with ``entry_points`` (lines of the group
    ``himga.benchmarks``) and, if given, ``module`` as :func:`plugin_module`'s source."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[himga.benchmarks]\n{entry_points}\n", encoding="utf-8"
    )
    if module:
        source = site / f"{plugin_module(site, dist)}.py"
        source.write_text(textwrap.dedent(module), encoding="utf-8")

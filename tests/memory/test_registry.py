"""Plug-in discovery through the ``himga.memories`` entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from himga.memory import (
    MemoryLoadError,
    NullMemory,
    PluginConflictError,
    PluginImportError,
    available_memories,
    load_memory,
)


def _install(
    root: Path, distribution: str, entry_points: dict[str, str], modules: dict[str, str]
) -> None:
    """A minimal installed distribution (dist-info with entry points) plus its modules."""
    # Wheel naming: the dist-info stem escapes "-" (importlib.metadata splits on it).
    info = root / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {spec}\n" for name, spec in entry_points.items())
    (info / "entry_points.txt").write_text(f"[himga.memories]\n{lines}", encoding="utf-8")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")


PLUGIN_SOURCE = """
    import sys
    sys.modules[__name__].imported = True

    class EchoMemory:
        def ingest(self, message, session, /): pass
        def retrieve(self, query, /): return ""
        def reset(self): pass
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("HIMGA_NO_PLUGINS", raising=False)
    return tmp_path


def test_builtins_are_registered_as_entry_points() -> None:
    memories = available_memories()
    assert memories["null"].spec == "himga.memory:NullMemory"
    assert memories["null"].distribution == "himga"
    assert load_memory("null") is NullMemory
    assert {"null", "full", "keyword", "bm25"} <= set(memories)


def test_spec_loads_without_registration() -> None:
    assert load_memory("himga.memory:NullMemory") is NullMemory


def test_third_party_plugin_is_listed_without_import_and_loaded_on_demand(site: Path) -> None:
    _install(
        site, "himga-echo", {"echo": "himga_echo_mod:EchoMemory"}, {"himga_echo_mod": PLUGIN_SOURCE}
    )
    memories = available_memories()
    assert memories["echo"].distribution == "himga-echo"
    assert "himga_echo_mod" not in sys.modules  # listing imports nothing
    factory = load_memory("echo")
    assert factory.__name__ == "EchoMemory"
    assert sys.modules["himga_echo_mod"].imported is True
    del sys.modules["himga_echo_mod"]


def test_no_plugins_keeps_only_builtins(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(
        site, "himga-echo", {"echo": "himga_echo_mod:EchoMemory"}, {"himga_echo_mod": PLUGIN_SOURCE}
    )
    monkeypatch.setenv("HIMGA_NO_PLUGINS", "1")
    assert "echo" not in available_memories()
    assert "null" in available_memories()
    with pytest.raises(MemoryLoadError, match="unknown memory 'echo'"):
        load_memory("echo")


def test_two_distributions_claiming_one_name_conflict(site: Path) -> None:
    _install(site, "alpha-memories", {"shared": "alpha_mod:A"}, {})
    _install(site, "beta-memories", {"shared": "beta_mod:B"}, {})
    with pytest.raises(PluginConflictError) as caught:
        load_memory("shared")
    assert "'alpha-memories'" in str(caught.value)
    assert "'beta-memories'" in str(caught.value)
    with pytest.raises(PluginConflictError):
        available_memories()
    assert load_memory("null") is NullMemory  # other names still load


def test_a_plugin_claiming_a_builtin_name_conflicts_unless_plugins_are_off(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(site, "impostor", {"null": "impostor_mod:Null"}, {})
    with pytest.raises(PluginConflictError, match=r"'himga'.*'impostor'|'impostor'.*'himga'"):
        load_memory("null")
    monkeypatch.setenv("HIMGA_NO_PLUGINS", "1")
    assert load_memory("null") is NullMemory


def test_import_error_inside_a_plugin_stays_visible(site: Path) -> None:
    _install(
        site,
        "broken-plugin",
        {"broken": "broken_plugin_mod:Memory"},
        {"broken_plugin_mod": "import himga_no_such_dependency\n"},
    )
    with pytest.raises(PluginImportError) as caught:
        load_memory("broken")
    assert "himga_no_such_dependency" in str(caught.value)
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


def test_error_raised_while_importing_a_plugin_is_chained(site: Path) -> None:
    _install(site, "raising", {}, {"raising_plugin_mod": "raise RuntimeError('bad config')\n"})
    with pytest.raises(PluginImportError, match="RuntimeError: bad config") as caught:
        load_memory("raising_plugin_mod:Memory")
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown memory 'nope'.*registered: .*null"),
        (":NullMemory", "malformed"),
        ("himga.memory:", "malformed"),
        ("a:b:c", "malformed"),
        ("himga_missing_module:X", "no module named 'himga_missing_module'"),
        ("himga.memory:NoSuchMemory", "has no attribute 'NoSuchMemory'"),
        ("himga:__version__", "is not callable"),
    ],
)
def test_bad_names_and_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(MemoryLoadError, match=message):
        load_memory(spec)


@pytest.mark.integration
def test_importing_himga_memory_does_not_import_hypothesis() -> None:
    code = "import sys, himga.memory; assert 'hypothesis' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_entry_point_extra_is_read_and_checked_from_metadata_alone(site: Path) -> None:
    _install(
        site,
        "himga-needy",
        {"needy": "himga_needy_mod:EchoMemory [gpu]", "plain": "himga_needy_mod:EchoMemory"},
        {"himga_needy_mod": PLUGIN_SOURCE},
    )
    metadata = site / "himga_needy-1.0.dist-info" / "METADATA"
    requires = 'Requires-Dist: no-such-distribution-xyz>=1; extra == "gpu"\n'
    metadata.write_text(metadata.read_text("utf-8") + requires, encoding="utf-8")
    memories = available_memories()
    assert memories["needy"].spec == "himga_needy_mod:EchoMemory"  # loadable: extra stripped
    assert memories["needy"].extras == ("gpu",)
    assert not memories["needy"].installed
    assert memories["plain"].installed  # needs no extra
    assert memories["dense"].extras == ("dense",)
    assert memories["dense"].installed  # the dev environment has every extra
    assert "himga_needy_mod" not in sys.modules  # none of it imports the plug-in
    assert load_memory("needy").__name__ == "EchoMemory"
    del sys.modules["himga_needy_mod"]


def test_every_registered_memory_is_named_in_the_docs() -> None:
    # docs/eval.md and docs/memory.md listed 4 memories when 9 were registered.
    root = Path(__file__).resolve().parents[2]
    names = {name for name, p in available_memories().items() if p.distribution == "himga"}
    for doc in ("docs/eval.md", "docs/memory.md"):
        text = (root / doc).read_text("utf-8")
        missing = sorted(name for name in names if f"`{name}`" not in text)
        assert not missing, f"{doc} does not name {missing}"

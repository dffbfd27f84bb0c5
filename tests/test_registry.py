"""The generic registry (himga._registry): the duplicate rule, the conflict rule between
built-ins and plug-ins, the lookup order and the broken lines, over fake entry points."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga import _registry
from himga._errors import HimgaError
from himga._registry import Registered, Registry, distinct

_GROUP = "himga.test_registry"


class _Error(HimgaError, ValueError):
    pass


def _entry_point(name: str, value: str, distribution: str) -> Any:
    return SimpleNamespace(name=name, value=value, dist=SimpleNamespace(name=distribution))


def _registry_of(
    monkeypatch: pytest.MonkeyPatch, points: list[Any], gives: dict[str, list[tuple[str, object]]]
) -> Registry[str, object]:
    """A registry over ``points``, each giving ``gives[its value]`` (a value that is not
    there is a broken entry point)."""

    def found(group: str) -> list[Any]:
        assert group == _GROUP
        return points

    def load(entry_point: Any, origin: str) -> Iterable[tuple[str, object]]:
        if entry_point.value not in gives:
            raise _Error(f"cannot load {origin}: boom")
        return gives[entry_point.value]

    monkeypatch.setattr(_registry, "entry_points", found)
    monkeypatch.delenv("HIMGA_NO_PLUGINS", raising=False)
    return Registry(
        group=_GROUP,
        kind="thing",
        error=_Error,
        registered=Registered(_Error, lambda key: f"thing {key!r} is already registered"),
        load_builtin=load,
        load_plugin=load,
        broken_key=lambda entry_point: str(entry_point.name),
        reserved=lambda key, builtins: builtins[key].origin if key in builtins else None,
        same=lambda one, other: one.origin == other.origin,  # one plug-in's repeats
        refused=lambda key, origin, where: f"{origin}: {key!r} is refused: built-in ({where})",
        twice=lambda key, origins: f"{key!r} twice: by {' and by '.join(origins)}",
    )


def test_lookup_order_is_registered_then_builtin_then_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builtin, plugin, mine = object(), object(), object()
    points = [_entry_point("a", "own:a", "himga"), _entry_point("b", "their:b", "other")]
    registry = _registry_of(
        monkeypatch, points, {"own:a": [("a", builtin)], "their:b": [("b", plugin)]}
    )
    assert registry.lookup("a") is builtin
    assert registry.lookup("b") is plugin
    assert registry.lookup("c") is None
    registry.registered.add([("a", mine)], replace=True, taken=lambda key: False)
    assert registry.lookup("a") is mine
    assert registry.entries(lambda line: None) == {"a": mine, "b": plugin}


def test_a_builtin_lookup_loads_no_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []
    points = [_entry_point("a", "own:a", "himga"), _entry_point("b", "their:b", "other")]
    registry = _registry_of(monkeypatch, points, {"own:a": [("a", 1)], "their:b": [("b", 2)]})
    original = registry._load_plugin

    def counted(entry_point: Any, origin: str) -> Iterable[tuple[str, object]]:
        loaded.append(entry_point.name)
        return original(entry_point, origin)

    registry._load_plugin = counted
    assert registry.lookup("a") == 1
    assert loaded == []
    assert registry.lookup("b") == 2
    assert loaded == ["b"]


def test_a_duplicate_registration_is_the_registrys_error_naming_it() -> None:
    registered: Registered[str, int] = Registered(_Error, lambda key: f"{key!r} is taken")
    registered.add([("x", 1)], replace=False, taken=registered.entries.__contains__)
    with pytest.raises(_Error, match=r"^'x' is taken$"):
        registered.add([("y", 2), ("x", 3)], replace=False, taken=registered.entries.__contains__)
    assert registered.entries == {"x": 1}  # all or none
    registered.add([("x", 3)], replace=True, taken=registered.entries.__contains__)
    assert registered.entries == {"x": 3}


def test_conflicts_keep_neither_and_name_each_claimant(monkeypatch: pytest.MonkeyPatch) -> None:
    points = [
        _entry_point("a", "own:a", "himga"),
        _entry_point("p", "one:p", "one"),
        _entry_point("q", "two:q", "two"),
        _entry_point("r", "three:r", "three"),
    ]
    gives: dict[str, list[tuple[str, object]]] = {
        "own:a": [("a", 1)],
        "one:p": [("a", 2), ("shared", 3)],
        "two:q": [("shared", 4)],
    }
    registry = _registry_of(monkeypatch, points, gives)
    found = registry.plugins()
    assert found.entries == {}
    one, two = (registry.origin(points[i]) for i in (1, 2))
    assert found.broken == {
        "a": f"{one}: 'a' is refused: built-in ({registry.origin(points[0])})",
        "r": f"cannot load {registry.origin(points[3])}: boom",
        "shared": f"'shared' twice: by {one} and by {two}",
    }
    assert registry.lookup("a") == 1  # the built-in is kept
    with pytest.raises(_Error, match="twice"):
        registry.lookup("shared")
    with pytest.raises(_Error, match="boom"):
        registry.lookup("r")


def test_listing_passes_each_broken_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    points = [_entry_point("r", "gone:r", "other")]
    registry = _registry_of(monkeypatch, points, {})
    lines: list[str] = []
    assert registry.entries(lines.append) == {}
    assert lines == [f"cannot load {registry.origin(points[0])}: boom"]


def test_no_plugins_keeps_only_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    points = [_entry_point("a", "own:a", "himga"), _entry_point("b", "their:b", "other")]
    registry = _registry_of(monkeypatch, points, {"own:a": [("a", 1)], "their:b": [("b", 2)]})
    monkeypatch.setenv("HIMGA_NO_PLUGINS", "1")
    assert registry.lookup("b") is None
    assert registry.entries(lambda line: pytest.fail(line)) == {"a": 1}


def test_distinct_drops_a_repeated_entry_point() -> None:
    points = [
        _entry_point("a", "m:a", "x"),
        _entry_point("a", "m:a", "x"),
        _entry_point("a", "n:a", "y"),
    ]
    assert [p.value for p in distinct(points)] == ["m:a", "n:a"]


_KEYS = st.sampled_from("abcd")


@settings(max_examples=60, deadline=None)
@given(
    builtins=st.sets(_KEYS),
    plugins=st.lists(st.lists(_KEYS, max_size=3), max_size=4),
    registered=st.sets(_KEYS),
)
def test_every_key_is_kept_once_refused_or_shadowed(
    builtins: set[str], plugins: list[list[str]], registered: set[str]
) -> None:
    """The law: a plug-in's key is kept iff no built-in has it and exactly one plug-in
    claims it; otherwise it is refused (a built-in's key still finds the built-in), and a
    registered entry wins over both."""
    points = [_entry_point("own", "own:all", "himga")] + [
        _entry_point(f"p{i}", f"p{i}:x", f"dist{i}") for i in range(len(plugins))
    ]
    gives: dict[str, list[tuple[str, object]]] = {
        "own:all": [(k, ("builtin", k)) for k in builtins]
    }
    for i, keys in enumerate(plugins):
        gives[f"p{i}:x"] = [(k, (f"p{i}", k)) for k in keys]
    with pytest.MonkeyPatch.context() as monkeypatch:
        registry = _registry_of(monkeypatch, points, gives)
        for key in registered:
            registry.registered.entries[key] = ("mine", key)
        found = registry.plugins()
        for key in "abcd":
            claimants = {i for i, keys in enumerate(plugins) if key in keys}
            kept = key not in builtins and len(claimants) == 1
            assert (key in found.entries) == kept
            assert (key in found.broken) == (bool(claimants) and not kept)
            assert not (key in found.entries and key in found.broken)
            if key in registered:
                expected: object = ("mine", key)
            elif key in builtins:
                expected = ("builtin", key)
            elif kept:
                expected = (f"p{claimants.pop()}", key)
            else:
                expected = None
            if expected is None and key in found.broken:
                with pytest.raises(_Error):
                    registry.lookup(key)
            else:
                assert registry.lookup(key) == expected
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            listed = registry.entries(lambda line: None)
        assert set(listed) == registered | builtins | set(found.entries)

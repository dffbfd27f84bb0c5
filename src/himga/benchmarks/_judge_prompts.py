"""The judge-prompt bank: every benchmark's named judges, looked up by (benchmark, name).

``official`` is each benchmark's own :attr:`~himga.benchmarks.Benchmark.judge` (its
official prompts, verbatim and hash-pinned). Others register under the entry-point
group :data:`ENTRY_POINT_GROUP` -- himga's own (``strict`` for LoCoMo and LongMemEval)
like any user's -- or with :func:`register_judge_prompt`. An entry point's value is
``module:attr`` naming a :class:`JudgePrompt`, or a zero-argument callable returning
one or an iterable of them.

Plug-ins load as benchmark plug-ins do (:mod:`himga.benchmarks._registry`): lazily
(only when a name that is neither ``official`` nor himga's own is asked, or a bank is
listed), each on its own thread within the same timeout, ``HIMGA_NO_PLUGINS=1``
keeping only himga's own. A broken one, a name a built-in has, and a name two
plug-ins claim for one benchmark (neither is kept) are refused with one line naming
the entry point(s): :class:`JudgePromptError` when that name is asked, a
:class:`~himga.benchmarks.BenchmarkPluginWarning` when a bank is listed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from himga._errors import HimgaError
from himga.benchmarks._protocol import Judge
from himga.benchmarks._registry import (
    PluginCaches,
    entry_point_origin,
    get_benchmark,
    load_isolated,
    one_line,
    plugins_disabled,
    resolve_entry_point,
    warn_skipped,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "OFFICIAL",
    "JudgePrompt",
    "JudgePromptError",
    "get_judge_prompt",
    "judge_prompts",
    "register_judge_prompt",
]

ENTRY_POINT_GROUP = "himga.judge_prompts"
#: The name of every benchmark's own judge.
OFFICIAL = "official"
_BUILTIN_DISTRIBUTION = "himga"


class JudgePromptError(HimgaError, ValueError):
    """No judge prompt of that name for that benchmark, or the plug-in that gives it is
    broken or refused (the message is one line naming it)."""


@dataclass(frozen=True)
class JudgePrompt:
    """A named judge of one or more benchmarks: ``name`` (no ``:`` nor blank; it ends the
    judge's id), the ``benchmarks`` it judges (by name), the ``judge`` and one line of
    ``description``. The judge's template names (``judge.prompts``) must be its own:
    the same name always means the same text."""

    name: str
    benchmarks: tuple[str, ...]
    judge: Judge
    description: str = ""


_Key = tuple[str, str]  # (benchmark, prompt name)


def _checked(made: object, origin: str) -> JudgePrompt:
    """``made`` if it is a well-formed :class:`JudgePrompt`; :class:`JudgePromptError` otherwise."""
    if not isinstance(made, JudgePrompt):
        raise JudgePromptError(f"{origin}: gave {one_line(repr(made))[:80]}, not a JudgePrompt")
    name = made.name
    if not isinstance(name, str) or not name or ":" in name or name != "".join(name.split()):
        raise JudgePromptError(
            f"{origin}: name {name!r} is refused (empty, or holds ':' or a blank)"
        )
    if not made.benchmarks or not all(isinstance(b, str) for b in made.benchmarks):
        raise JudgePromptError(f"{origin}: benchmarks {made.benchmarks!r} is not a tuple of names")
    if not isinstance(made.judge, Judge):
        raise JudgePromptError(f"{origin}: judge {made.judge!r} is not a Judge")
    return made


def _made(loaded: object, origin: str) -> list[JudgePrompt]:
    if isinstance(loaded, JudgePrompt):
        return [_checked(loaded, origin)]
    if not callable(loaded):
        raise JudgePromptError(f"{origin}: {loaded!r} is neither a JudgePrompt nor callable")
    made = loaded()
    if isinstance(made, JudgePrompt):
        return [_checked(made, origin)]
    if isinstance(made, (str, bytes, dict)) or not isinstance(made, Iterable):
        raise JudgePromptError(
            f"{origin}: {loaded!r} returned {one_line(repr(made))[:80]}, "
            "not a JudgePrompt or an iterable of them"
        )
    return [_checked(one, origin) for one in made]


def _origin(entry_point: EntryPoint) -> str:
    return entry_point_origin("judge prompt", entry_point)


def _load(entry_point: EntryPoint) -> list[JudgePrompt]:
    origin = _origin(entry_point)
    return _made(resolve_entry_point(entry_point, origin, JudgePromptError), origin)


def _builtins() -> dict[_Key, tuple[JudgePrompt, str]]:
    found: dict[_Key, tuple[JudgePrompt, str]] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.dist is not None and entry_point.dist.name == _BUILTIN_DISTRIBUTION:
            for prompt in _load(entry_point):
                for benchmark in prompt.benchmarks:
                    found.setdefault((benchmark, prompt.name), (prompt, _origin(entry_point)))
    return found


@dataclass(frozen=True)
class _Found:
    prompts: dict[_Key, JudgePrompt]
    broken: dict[_Key, str]  # by each key it claims; (entry point name, "") when none is known


def _plugins(builtins: dict[_Key, tuple[JudgePrompt, str]]) -> _Found:
    claims: dict[_Key, list[tuple[JudgePrompt, str]]] = {}
    broken: dict[_Key, str] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.dist is not None and entry_point.dist.name == _BUILTIN_DISTRIBUTION:
            continue
        origin = _origin(entry_point)
        try:
            made = load_isolated(
                entry_point.name, origin, functools.partial(_load, entry_point), JudgePromptError
            )
        except JudgePromptError as exc:
            broken[(entry_point.name, "")] = str(exc)
            continue
        for prompt in made:
            for benchmark in prompt.benchmarks:
                key = (benchmark, prompt.name)
                if prompt.name == OFFICIAL or key in builtins:
                    where = (
                        "every benchmark's own judge"
                        if prompt.name == OFFICIAL
                        else builtins[key][1]
                    )
                    broken[key] = (
                        f"{origin}: judge prompt {prompt.name!r} of {benchmark!r} is refused: "
                        f"it is himga's built-in ({where})"
                    )
                    continue
                claims.setdefault(key, []).append((prompt, origin))
    found: dict[_Key, JudgePrompt] = {}
    for key, claimants in claims.items():
        origins = list(dict.fromkeys(origin for _, origin in claimants))
        if len(origins) == 1:
            found[key] = claimants[0][0]
        else:
            broken[key] = (
                f"judge prompt {key[1]!r} of {key[0]!r} is registered twice: by "
                f"{' and by '.join(origins)}; neither is used"
            )
    return _Found(found, broken)


_registered: dict[_Key, JudgePrompt] = {}
_caches = PluginCaches(_builtins, _plugins)


def _builtin() -> dict[_Key, tuple[JudgePrompt, str]]:
    return _caches.builtins()


def _third_party() -> _Found:
    if plugins_disabled():
        return _Found({}, {})
    return _caches.plugins()


def _official(benchmark: str) -> JudgePrompt | None:
    judge = get_benchmark(benchmark).judge
    if judge is None:
        return None
    return JudgePrompt(OFFICIAL, (benchmark,), judge, "the benchmark's official judge prompts")


def judge_prompts(benchmark: str) -> dict[str, JudgePrompt]:
    """Every judge prompt of ``benchmark`` by name: ``official`` first (when it has a
    judge), then himga's own, then the plug-ins' and the registered ones. Broken or
    refused plug-ins are left out, each warned once."""
    found: dict[str, JudgePrompt] = {}
    official = _official(benchmark)
    if official is not None:
        found[OFFICIAL] = official
    found.update({n: p for (b, n), (p, _) in _builtin().items() if b == benchmark})
    plugins = _third_party()
    for line in dict.fromkeys(plugins.broken.values()):
        warn_skipped(line)
    found.update({n: p for (b, n), p in plugins.prompts.items() if b == benchmark})
    found.update({n: p for (b, n), p in _registered.items() if b == benchmark})
    return found


def get_judge_prompt(benchmark: str, name: str = OFFICIAL) -> JudgePrompt:
    """The judge prompt ``name`` of ``benchmark``; :class:`JudgePromptError` listing the
    known ones when there is none, or naming the plug-in that gives it when it is broken."""
    key = (benchmark, name)
    if key in _registered:
        return _registered[key]
    if name == OFFICIAL:
        official = _official(benchmark)
        if official is not None:
            return official
    elif key in _builtin():
        return _builtin()[key][0]
    else:
        plugins = _third_party()
        if key in plugins.prompts:
            return plugins.prompts[key]
        if key in plugins.broken:
            raise JudgePromptError(plugins.broken[key])
    known = ", ".join(judge_prompts(benchmark)) or "none (it has no judge)"
    raise JudgePromptError(f"no judge prompt {name!r} for {benchmark!r}; known: {known}")


def register_judge_prompt(prompt: JudgePrompt, *, replace: bool = False) -> None:
    """Make ``prompt`` known for each of its benchmarks, in this process; a (benchmark,
    name) already known is :class:`JudgePromptError` unless ``replace``."""
    checked = _checked(prompt, "register_judge_prompt")
    for benchmark in checked.benchmarks:
        if not replace and checked.name in judge_prompts(benchmark):
            raise JudgePromptError(
                f"judge prompt {checked.name!r} of {benchmark!r} is already registered; "
                "pass replace=True"
            )
    for benchmark in checked.benchmarks:
        _registered[(benchmark, checked.name)] = checked

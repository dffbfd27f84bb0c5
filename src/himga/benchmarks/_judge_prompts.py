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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint

from himga._errors import HimgaError
from himga._registry import Entry, Registered, Registry
from himga.benchmarks._protocol import Judge
from himga.benchmarks._registry import (
    get_benchmark,
    load_isolated,
    one_line,
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


def _load(entry_point: EntryPoint, origin: str) -> list[tuple[_Key, JudgePrompt]]:
    made = _made(resolve_entry_point(entry_point, origin, JudgePromptError), origin)
    return [((bench, prompt.name), prompt) for prompt in made for bench in prompt.benchmarks]


def _load_plugin(entry_point: EntryPoint, origin: str) -> list[tuple[_Key, JudgePrompt]]:
    return load_isolated(
        entry_point.name, origin, functools.partial(_load, entry_point, origin), JudgePromptError
    )


def _reserved(key: _Key, builtins: Mapping[_Key, Entry[JudgePrompt]]) -> str | None:
    if key[1] == OFFICIAL:
        return "every benchmark's own judge"
    return builtins[key].origin if key in builtins else None


_prompts: Registry[_Key, JudgePrompt] = Registry(
    group=ENTRY_POINT_GROUP,
    kind="judge prompt",
    error=JudgePromptError,
    registered=Registered(
        JudgePromptError,
        lambda key: (
            f"judge prompt {key[1]!r} of {key[0]!r} is already registered; pass replace=True"
        ),
    ),
    load_builtin=_load,
    load_plugin=_load_plugin,
    broken_key=lambda entry_point: (entry_point.name, ""),  # no key is known
    reserved=_reserved,
    same=lambda one, other: one.origin == other.origin,
    refused=lambda key, origin, where: (
        f"{origin}: judge prompt {key[1]!r} of {key[0]!r} is refused: "
        f"it is himga's built-in ({where})"
    ),
    twice=lambda key, origins: (
        f"judge prompt {key[1]!r} of {key[0]!r} is registered twice: by "
        f"{' and by '.join(origins)}; neither is used"
    ),
)


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
    found.update({n: p for (b, n), p in _prompts.entries(warn_skipped).items() if b == benchmark})
    return found


def get_judge_prompt(benchmark: str, name: str = OFFICIAL) -> JudgePrompt:
    """The judge prompt ``name`` of ``benchmark``; :class:`JudgePromptError` listing the
    known ones when there is none, or naming the plug-in that gives it when it is broken."""
    key = (benchmark, name)
    if name != OFFICIAL:
        found = _prompts.lookup(key)
        if found is not None:
            return found
    elif key in _prompts.registered.entries:  # a benchmark without a judge's "official"
        return _prompts.registered.entries[key]
    else:
        official = _official(benchmark)
        if official is not None:
            return official
    known = ", ".join(judge_prompts(benchmark)) or "none (it has no judge)"
    raise JudgePromptError(f"no judge prompt {name!r} for {benchmark!r}; known: {known}")


def register_judge_prompt(prompt: JudgePrompt, *, replace: bool = False) -> None:
    """Make ``prompt`` known for each of its benchmarks, in this process; a (benchmark,
    name) already known is :class:`JudgePromptError` unless ``replace``."""
    checked = _checked(prompt, "register_judge_prompt")
    _prompts.registered.add(
        [((benchmark, checked.name), checked) for benchmark in checked.benchmarks],
        replace=replace,
        taken=lambda key: key[1] in judge_prompts(key[0]),
    )

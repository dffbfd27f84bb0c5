"""The verdicts of run directories written before ``verdicts.jsonl``, read for a resume.

Such a run kept its judge's verdicts in :data:`JUDGE_CACHE` (a JSON object, by request
key, rewritten whole) and, while judging, :data:`JUDGE_JOURNAL` (one ``[key, verdict]``
line per verdict; left beside the cache by a killed run). Both still read: a resume
of such a run asks its judge only the verdicts neither holds. New runs record every
verdict in the verdict record (:mod:`himga.runs._verdicts`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga.runs._files import leading_entries
from himga.runs._records import read_jsonl

__all__ = ["JUDGE_CACHE", "JUDGE_JOURNAL", "read_journal", "read_legacy_verdicts"]

#: The judge's verdicts, by request, of a run written before ``verdicts.jsonl``.
JUDGE_CACHE = "judge_cache.json"
#: One ``[request key, verdict]`` JSON array per line, appended while judging (older runs).
JUDGE_JOURNAL = "judge_journal.jsonl"


def read_journal(file: Path, notify: Callable[[str], None]) -> dict[str, Any]:
    """The verdicts of the whole lines of ``file`` (none if it is missing); a damaged
    line ends the reading and is said through ``notify`` (a torn last line, left by a
    killed process, is not damage)."""
    damaged: list[str] = []
    try:
        lines = read_jsonl(file, on_damage=damaged.append)
    except OSError as exc:
        notify(f"{file}: cannot read: {exc.strerror}; its verdicts are asked again")
        return {}
    found: dict[str, Any] = {}
    for line in lines:
        if not (isinstance(line, list) and len(line) == 2 and isinstance(line[0], str)):
            damaged.append("not a [key, verdict] line")
            break
        found[line[0]] = line[1]
    if damaged:
        notify(
            f"{file}:{len(found) + 1}: not a [key, verdict] line: kept the {len(found)} "
            "verdicts before it; the other answers are judged again"
        )
    return found


def read_legacy_verdicts(directory: Path, notify: Callable[[str], None]) -> dict[str, Any]:
    """The verdicts of ``judge_cache.json`` in ``directory`` and of the journal a killed
    run left beside it; of a damaged cache (torn by a crash of an older himga, or
    edited), those before the damage, said through ``notify``."""
    journal = read_journal(directory / JUDGE_JOURNAL, notify)
    file = directory / JUDGE_CACHE
    try:
        text = file.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return journal
    except OSError as exc:
        notify(f"{file}: cannot read: {exc.strerror}; its verdicts are asked again")
        return journal
    try:
        cache = json.loads(text)
    except (ValueError, RecursionError) as exc:
        problem = f"{file}: invalid JSON: {exc}"
    else:
        if isinstance(cache, dict):
            return {**cache, **journal}
        problem = f"{file}: expected a JSON object"
    kept = leading_entries(text)
    notify(
        f"{problem}: kept the {len(kept)} verdicts before the damage; "
        "the other answers are judged again"
    )
    return {**kept, **journal}

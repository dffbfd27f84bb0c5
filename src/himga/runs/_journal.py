"""The judge's verdicts kept as they arrive, so a killed run pays for none of them twice.

Each verdict is appended (and flushed) to :data:`JUDGE_JOURNAL` the moment it is
parsed; :data:`~himga.runs.JUDGE_CACHE` is rewritten whole, atomically, when
judging starts and when it ends or is interrupted, and the journal is then
removed. A process killed in between (``kill -9``) leaves both files; the next
invocation reads the cache and every whole line of the journal (the last may be
torn). The flush reaches the operating system, not the disk: a power cut may
still lose the latest verdicts.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import IO, Any

from himga._json import dumps
from himga.runs._files import write_json

__all__ = ["JUDGE_JOURNAL", "VerdictJournal", "read_journal"]

#: One ``[request key, verdict]`` JSON array per line, appended while judging.
JUDGE_JOURNAL = "judge_journal.jsonl"


def read_journal(file: Path, notify: Callable[[str], None]) -> dict[str, Any]:
    """The verdicts of the whole lines of ``file`` (none if it is missing); a damaged
    line ends the reading and is said through ``notify`` (a torn last line, left by a
    killed process, is not damage)."""
    try:
        text = file.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        notify(f"{file}: cannot read: {exc.strerror}; its verdicts are asked again")
        return {}
    found: dict[str, Any] = {}
    for number, line in enumerate(text.split("\n")[:-1], 1):
        try:
            key, verdict = json.loads(line)
            if not isinstance(key, str):
                raise ValueError("the key is not a string")
        except (ValueError, TypeError, RecursionError):
            notify(
                f"{file}:{number}: not a [key, verdict] line: kept the {len(found)} "
                "verdicts before it; the other answers are judged again"
            )
            break
        found[key] = verdict
    return found


class VerdictJournal(MutableMapping[str, Any]):
    """The verdicts of one run directory: a mapping for
    :func:`~himga.eval.judge.batch_judge`'s ``cache``, used as a context manager.

    Entering writes ``entries`` whole to ``cache_file`` and starts ``journal_file``
    empty; each verdict set is appended to the journal at once. Leaving writes every
    verdict whole to ``cache_file`` and removes the journal. A journal write that
    fails (a full disk) stops the journal, not the judging: the verdicts stay in
    memory for the final write, whose failure is the run's.
    """

    def __init__(self, cache_file: Path, journal_file: Path, entries: dict[str, Any]) -> None:
        self._cache_file = cache_file
        self._journal_file = journal_file
        self._entries = dict(entries)
        self._stream: IO[str] | None = None

    def __enter__(self) -> VerdictJournal:
        # The old journal's verdicts are in ``entries``: folded into the cache first,
        # so the journal can start empty (and a torn last line is not appended to).
        write_json(self._cache_file, self._entries)
        try:
            self._stream = self._journal_file.open("w", encoding="utf-8", newline="\n")
        except OSError:
            self._stream = None
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()
        write_json(self._cache_file, self._entries)
        self._journal_file.unlink(missing_ok=True)

    def _stop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            # What it could not flush is in memory, written with the cache.
            with contextlib.suppress(OSError):
                stream.close()

    def __getitem__(self, key: str) -> Any:
        return self._entries[key]

    def __setitem__(self, key: str, verdict: Any) -> None:
        self._entries[key] = verdict
        if self._stream is not None:
            try:
                self._stream.write(dumps([key, verdict]) + "\n")
                self._stream.flush()
            except OSError:
                self._stop()

    def __delitem__(self, key: str) -> None:
        raise TypeError("a verdict is never withdrawn")

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

"""The verdict record: every judge's verdicts of one run, appended to ``verdicts.jsonl``.

Each line is one JSON object naming its judge by :func:`judge_id`, of one of three kinds:

* ``{"judge", "started", "predictions_sha256"}``: a judging began, by the judge the
  ``started`` object describes (the manifest's ``judges`` entry), over the answers
  whose :func:`predictions_sha256` it gives;
* ``{"judge", "request", "verdict"}``: the parsed verdict of one judge request (its
  cache key: SHA-256 of provider, model and the filled prompt), appended the moment
  it is parsed, so a ``kill -9`` loses none already written and a resume asks only
  the others;
* ``{"judge", "question", "score", "error"}``: a question's score (``null`` when it
  has none, ``error`` saying why), appended when the judging ends, so a reader needs
  no judge code to read the scores. The last line of a question counts.

The file is only appended to (:class:`~himga.runs._records.JsonlAppender`); a torn last
line is dropped when it is read and cut off before the next append.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from himga._json import JSONValue, dumps
from himga._redact import redact
from himga.eval.judge import JudgeScores, judge_id
from himga.runs._records import JsonlAppender, read_jsonl
from himga.scoring._result import EvalResult

__all__ = [
    "VERDICTS",
    "RecordedVerdicts",
    "VerdictRecord",
    "judge_id",
    "predictions_sha256",
    "read_verdicts",
]

#: The verdict record of a run directory.
VERDICTS = "verdicts.jsonl"


def predictions_sha256(results: Sequence[EvalResult]) -> str:
    """The SHA-256 of every result's (sample id, question id, prediction), in order: what
    a judge judged, so answers changed since are told."""
    material = dumps([[r.sample_id, r.question_id, r.prediction] for r in results])
    return hashlib.sha256(material.encode("utf-8", errors="backslashreplace")).hexdigest()


@dataclass
class RecordedVerdicts:
    """What ``verdicts.jsonl`` holds, by judge id: the verdict of each request, the last
    score (and error) of each question, and the last judging's start line."""

    verdicts: dict[str, dict[str, JSONValue]] = field(default_factory=dict)
    scores: dict[str, dict[tuple[str, str], tuple[float | None, str | None]]] = field(
        default_factory=dict
    )
    started: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_verdicts(path: Path, notify: Callable[[str], None]) -> RecordedVerdicts:
    """The record at ``path`` (empty if missing); a damaged line (one that is not one of
    the three kinds) is said through ``notify`` and ends the reading, the lines before
    it kept: the verdicts after it are asked again."""
    found = RecordedVerdicts()
    for number, line in enumerate(read_jsonl(path, on_damage=notify), 1):
        judge = line.get("judge") if isinstance(line, dict) else None
        if not isinstance(judge, str):
            notify(f"{path}:{number}: not a verdict record line; the lines after it are not read")
            break
        if isinstance(line.get("request"), str) and "verdict" in line:
            found.verdicts.setdefault(judge, {})[line["request"]] = line["verdict"]
        elif _is_question(line.get("question")) and _is_score(line.get("score")):
            error = line.get("error")
            sample_id, question_id = line["question"]
            found.scores.setdefault(judge, {})[(sample_id, question_id)] = (
                line["score"],
                error if isinstance(error, str) else None,
            )
        elif isinstance(line.get("started"), dict) and isinstance(
            line.get("predictions_sha256"), str
        ):
            found.started[judge] = {
                **line["started"],
                "predictions_sha256": line["predictions_sha256"],
            }
        else:
            notify(f"{path}:{number}: not a verdict record line; the lines after it are not read")
            break
    return found


def _is_question(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _is_score(value: object) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


class VerdictRecord(MutableMapping[str, Any]):
    """One judge's verdicts in a run's record: a mapping for
    :func:`~himga.eval.judge.batch_judge`'s ``cache``, used as a context manager.

    Holds ``known`` (the verdicts recorded before) and appends each new one to ``path``
    under ``judge`` as it is set. An append that fails (a full disk) stops the
    appending, not the judging: the verdict stays in memory for this invocation's
    scores, and a resume asks it again.
    """

    def __init__(self, path: Path, judge: str, known: Mapping[str, Any]) -> None:
        self.judge = judge
        self._entries = dict(known)
        self._appender: JsonlAppender | None = JsonlAppender(path)

    def __enter__(self) -> VerdictRecord:
        if self._appender is not None:
            try:
                self._appender.open()
            except OSError:
                self._appender = None
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        appender, self._appender = self._appender, None
        if appender is not None:
            appender.close()

    def _append(self, line: Mapping[str, Any]) -> None:
        if self._appender is None:
            return
        try:
            self._appender.append({"judge": self.judge, **line})
        except OSError:
            self._stop()

    def start(self, described: Mapping[str, Any], fingerprint: str) -> None:
        """Record that a judging by the judge ``described`` begins over the answers
        whose :func:`predictions_sha256` is ``fingerprint``."""
        self._append({"started": dict(described), "predictions_sha256": fingerprint})

    def record_scores(self, results: Sequence[EvalResult], scores: JudgeScores) -> None:
        """Append each question's score (and why it has none) under the judge."""
        for index, (result, score) in enumerate(zip(results, scores, strict=True)):
            self._append(
                {
                    "question": [result.sample_id, result.question_id],
                    "score": None if score != score else score,  # NaN -> null
                    "error": None if index not in scores.errors else redact(scores.errors[index]),
                }
            )

    def __getitem__(self, key: str) -> Any:
        return self._entries[key]

    def __setitem__(self, key: str, verdict: Any) -> None:
        self._entries[key] = verdict
        self._append({"request": key, "verdict": verdict})

    def __delitem__(self, key: str) -> None:
        raise TypeError("a verdict is never withdrawn")

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

"""The run directory: claimed (marked, locked) by one writer, written atomically, read back.

A run directory holds ``checkpoint.jsonl`` (the crash-safe record of finished
questions), ``results.jsonl``, ``metrics.json``, ``manifest.json`` and, as the
run needs them, ``verdicts.jsonl`` (every judge's verdicts), ``shard.json``, ``merge.json``,
``calls.jsonl`` (the model calls counted for the manifest's ``costs``) and
``report.md`` / ``report.png``. :data:`MARKER` says the directory is himga's;
:data:`LOCK` is held (an OS file lock, released when the process dies, even by
``kill -9``) while a process writes it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from himga._errors import HimgaError
from himga.eval._aggregate import compute_metrics
from himga.eval.judge import JudgeScores
from himga.runs._files import write_json, write_jsonl
from himga.runs._journal import JUDGE_CACHE, JUDGE_JOURNAL
from himga.runs._manifest import Manifest, ManifestError
from himga.runs._verdicts import VERDICTS, predictions_sha256, read_verdicts
from himga.scoring._result import EvalResult

__all__ = [
    "JUDGE_CACHE",
    "LOCK",
    "MARKER",
    "PLAN",
    "RUN_FILES",
    "Run",
    "RunDir",
    "RunDirError",
    "RunLockedError",
    "RunReadError",
    "guard_output",
]

#: Marks a directory as a himga run directory (``--fresh`` deletes only in one).
MARKER = ".himga-run"
#: Held locked by the process writing the run directory.
LOCK = ".himga-run.lock"
#: The questions a run plans and when it started, written as it starts (see :func:`load_run`).
PLAN = "plan.json"
#: The files of a run (``--fresh`` removes them; the marker and the lock stay).
RUN_FILES = (
    "checkpoint.jsonl",
    VERDICTS,  # every judge's verdicts and scores
    JUDGE_CACHE,  # the verdicts of a run from before verdicts.jsonl
    JUDGE_JOURNAL,  # and those of its judging that was killed
    "results.jsonl",
    "metrics.json",
    "manifest.json",
    "shard.json",
    "merge.json",
    "plan.json",  # the questions planned and the start: a partial run's total
    "calls.jsonl",  # each model call a proxy counted (the manifest's costs sum them)
    "report.md",  # himga report: it would describe the discarded run
    "report.png",
)


# Written before the checkpoint begins: a run stopped then left them, and nothing to resume.
_PRELUDE = ("calls.jsonl", PLAN)


class RunDirError(HimgaError, ValueError):
    """A directory cannot be used as this run's directory (the message says why and what to do)."""


class RunLockedError(RunDirError):
    """Another process is writing the run directory."""


class RunReadError(HimgaError, ValueError):
    """A run directory is missing a file or holds a malformed one (the message says which)."""


@dataclass(frozen=True)
class FinishedRunBase:
    """What a finished run read back has, its results read or not (:class:`Run`,
    :class:`~himga.runs.RunHead`): its directory, manifest and metrics."""

    path: Path
    manifest: Manifest
    metrics: dict[str, Any]

    @property
    def label(self) -> str:
        """The memory spec with its arguments, e.g. ``bm25 k=20``."""
        return self.manifest.label

    @property
    def dataset_name(self) -> str:
        """The dataset (benchmark) the run evaluated, e.g. ``locomo``."""
        return self.manifest.dataset.name


@dataclass(frozen=True)
class Run(FinishedRunBase):
    """A finished run as read back: its manifest, metrics and results (with judge scores,
    NaN where a question has none, and why the judge gave none: ``judge_errors``, aligned
    with ``results`` when read from a run directory, else empty).

    ``judges``: every judge's scores by judge id (:meth:`Manifest.judge_entries`), aligned
    with ``results``, NaN where that judge gave none; the eval's own judge's are ``judge``.
    ``stale_judges``: the ids of judges that judged other answers than these (the run
    was resumed and re-answered since): their scores are not in ``judges``."""

    results: list[EvalResult]
    judge: list[float]
    judge_errors: tuple[str | None, ...] = ()
    judges: Mapping[str, list[float]] = field(default_factory=dict)
    stale_judges: tuple[str, ...] = ()

    def measured(self) -> dict[str, Any]:
        """The metrics of the results themselves (``results.jsonl``, which :meth:`RunDir.read`
        checked against the manifest's SHA-256), as ``compare`` reads them: what
        ``report`` shows, whatever ``metrics.json`` -- which carries no checksum -- says.
        :class:`RunReadError` when a result cannot be scored (a category its benchmark
        does not have)."""
        described = self.manifest.judge
        judge = None
        if described is not None:
            judge = JudgeScores(
                self.judge,
                provider=described.get("provider", ""),
                model=described.get("model", ""),
                temperature=described.get("temperature"),
                prompt_hashes=described.get("prompt_hashes") or {},
                errors={i: e for i, e in enumerate(self.judge_errors) if e is not None},
                weights=described.get("weights"),
            )
        try:
            measured = compute_metrics(self.results, judge)
        except (ValueError, TypeError, KeyError) as exc:  # a result no metric can score
            raise RunReadError(
                f"{self.path / 'results.jsonl'}: its results cannot be scored: {exc}"
            ) from None
        normalised: dict[str, Any] = json.loads(json.dumps(measured))  # as metrics.json holds it
        return normalised


def _lock(file: IO[bytes]) -> bool:
    """Take the exclusive lock on ``file`` without waiting; whether it was free."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _first_line(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return file.readline(4096)
    except OSError:
        return b""


class RunDir:
    """One run directory at ``path``: :meth:`claim` it to write a run, :meth:`read` a finished one.

    Usable as a context manager: the lock taken by :meth:`claim` is released on exit.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock_file: IO[bytes] | None = None

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __enter__(self) -> RunDir:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    @property
    def checkpoint(self) -> Path:
        """``checkpoint.jsonl``."""
        return self.path / "checkpoint.jsonl"

    def file(self, name: str) -> Path:
        """The path of file ``name`` in the run directory."""
        return self.path / name

    def is_himga(self) -> bool:
        """Whether the directory is himga's: missing, empty, marked, or written by himga
        0.1.0 (a checkpoint or manifest of its making; it wrote no marker)."""
        if not self.path.is_dir():
            return not self.path.exists()
        names = {entry.name for entry in self.path.iterdir()}
        if not names - {LOCK} or MARKER in names:
            return True
        return _first_line(self.checkpoint).startswith(b'{"himga_checkpoint"') or (
            '"himga_version"' in _head(self.file("manifest.json"))
        )

    def holds_run(self) -> bool:
        """Whether the directory holds a run: not empty, and himga's (:meth:`is_himga`)."""
        try:
            return self.path.is_dir() and any(self.path.iterdir()) and self.is_himga()
        except OSError:
            return False

    def claim(self, *, resume: bool = False, fresh: bool = False) -> None:
        """Make the directory this process's run directory, or :class:`RunDirError` saying why not.

        Refused: a path that is a file or cannot be written; a non-empty directory
        that is not himga's (:meth:`is_himga`), ``fresh`` included; another
        process writing it (:class:`RunLockedError`); a run there (its
        checkpoint, or with none its results) unless ``resume`` or ``fresh``;
        ``resume`` without a checkpoint. ``fresh`` deletes :data:`RUN_FILES`.
        The lock is held until :meth:`release`.
        """
        path = self.path
        if path.exists() and not path.is_dir():
            raise RunDirError(f"{path} is a file, not a run directory: choose another --out")
        if not self.is_himga():
            raise RunDirError(
                f"{path} is not empty and not a himga run directory (no {MARKER}): "
                "refusing to write or delete there; choose an empty or new --out"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
            lock_file = (path / LOCK).open("a+b")
        except OSError as exc:
            raise RunDirError(f"cannot write the run directory {path}: {exc.strerror}") from None
        if not _lock(lock_file):
            lock_file.close()
            raise RunLockedError(
                f"{path} is being written by another himga process (it holds {LOCK}): "
                "wait for it to finish or choose another --out"
            )
        self._lock_file = lock_file
        try:
            self._prepare(resume=resume, fresh=fresh)
        except BaseException:
            self.release()
            raise

    def _prepare(self, *, resume: bool, fresh: bool) -> None:
        path = self.path
        exists = self.checkpoint.is_file()
        if fresh:
            for name in RUN_FILES:
                self.file(name).unlink(missing_ok=True)
        elif resume and not exists:
            raise RunDirError(
                f"--resume: {path} holds no run to resume (no {self.checkpoint.name})"
            )
        elif exists and not resume:
            raise RunDirError(
                f"{path} already holds a run: pass --resume to continue it or --fresh to start over"
            )
        elif not resume:
            # Calls counted before the checkpoint began (the pre-flight of a run stopped
            # then) belong to the run started here: its costs add them, as a resume would.
            left = [n for n in RUN_FILES if n not in _PRELUDE and self.file(n).exists()]
            if left:
                raise RunDirError(
                    f"{path} holds a run's {', '.join(left)} but no checkpoint to resume: "
                    "pass --fresh to start over there, or choose another --out"
                )
        write_json(self.file(MARKER), {"himga_run_directory": 1})

    def finished(self) -> int:
        """How many questions ``checkpoint.jsonl`` holds finished (no error), the last
        record of a question counting; 0 without a checkpoint. For telling what an
        interrupted run kept; a resume checks the file itself."""
        try:
            lines = self.checkpoint.read_bytes().split(b"\n")[1:-1]  # no header, no torn end
        except OSError:
            return 0
        done: dict[tuple[Any, Any], bool] = {}
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict):
                key = (record.get("sample_id"), record.get("question_id"))
                done[key] = record.get("error") is None and record.get("memory_error") is None
        return sum(done.values())

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        """Write JSON file ``name`` atomically."""
        write_json(self.file(name), data)

    def write_results(self, records: Iterable[Mapping[str, Any]]) -> str:
        """Write ``results.jsonl`` atomically; its SHA-256, for the manifest."""
        return write_jsonl(self.file("results.jsonl"), records)

    def write_manifest(self, manifest: Manifest) -> None:
        """Write ``manifest.json`` atomically."""
        self.write_json("manifest.json", manifest.to_dict())

    def read_json(self, name: str) -> Any:
        """JSON file ``name``; :class:`RunReadError` if missing or invalid."""
        file = self.file(name)
        try:
            return json.loads(file.read_text("utf-8"))
        except FileNotFoundError:
            raise RunReadError(f"{file}: missing (is {self.path} a himga eval run?)") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise RunReadError(f"{file}: invalid JSON: {exc}") from None
        except OSError as exc:
            raise RunReadError(f"{file}: cannot read: {exc.strerror}") from None

    def _object(self, name: str) -> dict[str, Any]:
        data = self.read_json(name)
        if not isinstance(data, dict):
            raise RunReadError(f"{self.file(name)}: expected a JSON object")
        return data

    def read_metrics(self) -> dict[str, Any]:
        """``metrics.json``; :class:`RunReadError` naming the field when it lacks what
        reading a run relies on (per-category blocks of numbers, counts, error lists)."""
        metrics = self._object("metrics.json")
        by_category = metrics.get("by_category")
        blocks = {f"by_category.{k}": v for k, v in _items(by_category)}
        blocks |= {key: metrics.get(key) for key in ("overall", "overall_with_adversarial")}
        problem = None if isinstance(by_category, dict) else ("by_category", "an object")
        for name, block in blocks.items():
            if not isinstance(block, dict) or not all(map(_number, block.values())):
                problem = problem or (name, "an object of numbers")
        counts = metrics.get("counts")
        if not isinstance(counts, dict) or not all(type(v) is int for v in counts.values()):
            problem = problem or ("counts", "an object of integers")
        for key in ("errors", "memory_errors"):
            found = metrics.get(key)
            if not isinstance(found, list) or not all(isinstance(e, dict) for e in found):
                problem = problem or (key, "a list of objects")
        if problem is not None:
            raise RunReadError(
                f"{self.file('metrics.json')}: field {problem[0]!r}: expected {problem[1]}"
            )
        return metrics

    def read_manifest(self) -> Manifest:
        """``manifest.json`` as a :class:`Manifest`; :class:`RunReadError` naming the field."""
        try:
            return Manifest.from_dict(self._object("manifest.json"))
        except ManifestError as exc:
            raise RunReadError(
                f"{self.file('manifest.json')}: {exc} (not written by a himga eval this version "
                "reads; redo the run with himga eval)"
            ) from None

    def read_records(
        self, name: str = "results.jsonl", *, sha256: str | None = None
    ) -> list[dict[str, Any]]:
        """Each line of JSONL file ``name`` as an object; :class:`RunReadError` naming the
        line. With ``sha256`` the file's bytes must have that checksum (read once: hashed,
        then parsed line by line, as bytes -- no decoding and re-splitting of the whole)."""
        file = self.file(name)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise RunReadError(f"{file}: missing (is {self.path} a himga eval run?)") from None
        except OSError as exc:
            raise RunReadError(f"{file}: cannot read: {exc}") from None
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise _changed(file)
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()  # the newline ending the last line
        records = []
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise RunReadError(f"{file}: cannot read: {exc}") from None
            except (json.JSONDecodeError, RecursionError) as exc:
                raise RunReadError(f"{file}:{number}: invalid JSON: {exc}") from None
            if not isinstance(record, dict):
                raise RunReadError(f"{file}:{number}: expected a JSON object")
            records.append(record)
        return records

    def verify_results(self, manifest: Manifest) -> None:
        """:class:`RunReadError` unless ``results.jsonl`` has the manifest's checksum
        (format 0 manifests carry none: nothing to verify)."""
        if manifest.results_sha256 is None:
            return
        file = self.file("results.jsonl")
        try:
            found = hashlib.sha256(file.read_bytes()).hexdigest()
        except FileNotFoundError:
            raise RunReadError(f"{file}: missing (is {self.path} a himga eval run?)") from None
        if found != manifest.results_sha256:
            raise _changed(file)

    def read(self) -> Run:
        """The finished run: manifest, metrics and results, the results checked against the
        manifest's checksum; :class:`RunReadError` saying what is wrong."""
        manifest = self.read_manifest()
        metrics = self.read_metrics()
        file = self.file("results.jsonl")
        results: list[EvalResult] = []
        judge: list[float] = []
        judge_errors: list[str | None] = []
        records = self.read_records(sha256=manifest.results_sha256)
        for number, record in enumerate(records, start=1):
            try:
                results.append(EvalResult.from_dict(record))
            except (KeyError, TypeError, ValueError) as exc:
                raise RunReadError(f"{file}:{number}: malformed result: {exc}") from None
            score = record.get("judge")
            judge.append(float(score) if isinstance(score, (int, float)) else math.nan)
            error = record.get("judge_error")
            judge_errors.append(None if error is None else str(error))
        judges, stale = self._judges(manifest, results, judge)
        return Run(self.path, manifest, metrics, results, judge, tuple(judge_errors), judges, stale)

    def _judges(
        self, manifest: Manifest, results: list[EvalResult], judge: list[float]
    ) -> tuple[dict[str, list[float]], tuple[str, ...]]:
        """Every judge's scores aligned with ``results`` (``judge``: the eval's own), and
        the ids of the judges that judged other answers; :class:`RunReadError` when
        ``verdicts.jsonl`` cannot be read."""
        entries = manifest.judge_entries()
        if not entries:
            return {}, ()
        file = self.file(VERDICTS)
        damage: list[str] = []
        try:
            recorded = read_verdicts(file, damage.append)
        except OSError as exc:
            raise RunReadError(f"{file}: cannot read: {exc.strerror}") from None
        if damage:
            raise RunReadError(damage[0])
        fingerprint = predictions_sha256(results)
        found: dict[str, list[float]] = {}
        stale: list[str] = []
        for entry in entries:
            name = str(entry["id"])
            if entry.get("scores", "results") == "results":
                found[name] = list(judge)
            elif entry.get("predictions_sha256") != fingerprint:
                stale.append(name)
            else:
                scores = recorded.scores.get(name, {})
                found[name] = [
                    math.nan if (s := scores.get(r.key, (None, None))[0]) is None else float(s)
                    for r in results
                ]
        return found, tuple(stale)


def guard_output(path: Path, *, own: Iterable[Path] = ()) -> None:
    """:class:`RunDirError` when writing ``path`` (a report, a figure, a cache) would write
    over a file of a run directory: one its directory already holds, or one named as a
    run's own files are (:data:`RUN_FILES`, :data:`MARKER`, :data:`LOCK`). ``own``: the
    paths the command may write there (``himga report``'s own ``report.md``).

    A run directory is evidence: only the command that made it writes its files.
    """
    directory = RunDir(path.parent if str(path.parent) else Path("."))
    if not directory.holds_run():
        return
    if path.resolve() in {p.resolve() for p in own}:
        return
    if path.exists() or path.name in {*RUN_FILES, MARKER, LOCK}:
        raise RunDirError(
            f"{path} is a file of the run directory {directory.path}: himga never writes "
            "over one; choose a path outside it"
        )


def _items(value: Any) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, dict) else []


def _number(value: Any) -> bool:
    """A metric value as written: a number (not a boolean) or ``None``."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _head(path: Path) -> str:
    """The first 4 KiB of a text file, or ``""``."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as file:
            return file.read(4096)
    except OSError:
        return ""


def _changed(file: Path) -> RunReadError:
    return RunReadError(
        f"{file} does not match the SHA-256 recorded in manifest.json (changed after "
        "the run); redo the run with himga eval --fresh, or restore the file"
    )

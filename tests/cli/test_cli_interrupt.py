"""``himga eval`` stopped anywhere -- Ctrl-C, a full disk -- keeps what it finished and
resumes to the run it would have made (issue 26).

Ctrl-C is a ``KeyboardInterrupt`` raised in the main thread at the k-th call of a
himga function (a trace function counts them; k drawn over a whole run). The disk
fills after a drawn number of bytes: every file a run opens for writing under its
directory fails with ``ENOSPC`` there, after writing what fitted (a torn write).
Each time: one line on stderr and no traceback; no file of the run directory
torn (the checkpoint's last line excepted: it is cut off when resumed); and
resuming (or rerunning) finishes with exactly the results of an uninterrupted run.
"""

from __future__ import annotations

import builtins
import errno
import gc
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import himga
from himga._cli import _compare, _datasets, _merge, _report
from himga.llm import ChatRequest, FakeLLMServer, LLMCache, echo_responder
from himga.runs._files import json_text, leading_entries
from himga.runs._journal import JUDGE_JOURNAL, read_journal
from himga.runs._rundir import JUDGE_CACHE
from himga.runs._verdicts import VERDICTS, VerdictRecord, read_verdicts
from tests.cli_support import QUICK, cwd, offline_cli, run_cli

pytestmark = pytest.mark.usefixtures("loopback_only")

RUN = ["eval", *QUICK, "--llm", "anthropic", "--out", "out"]
HIMGA_SOURCE = str(Path(himga.__file__).parent)
#: The property tests: each example is two runs (stopped, then finished), so fewer of them.
TWO_RUNS_EACH = settings(
    max_examples=max(4, settings().max_examples // 3),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: Fields that differ between two runs of the same questions.
TIMINGS = ("latency_s", "retrieval_latency_s")


def _results(out: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


class _Reference:
    """An uninterrupted run: its results, and how many himga calls its main thread made."""

    def __init__(self, root: Path) -> None:
        calls = 0

        def count(frame: FrameType, event: str, arg: Any) -> None:
            nonlocal calls
            if frame.f_code.co_filename.startswith(HIMGA_SOURCE):
                calls += 1

        with cwd(root):
            sys.settrace(count)
            try:
                code, stderr = run_cli(RUN)
            finally:
                sys.settrace(None)
        assert code == 0, stderr
        self.calls = calls
        self.results = _results(root / "out")
        self.written = sum(f.stat().st_size for f in (root / "out").iterdir())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Reference]:
    root = tmp_path_factory.mktemp("interrupt")
    with offline_cli(root):
        yield _Reference(root)


def _assert_untorn(out: Path) -> None:
    """Every file of ``out`` whole (the checkpoint's last line may be torn), no temporaries."""
    for file in out.iterdir() if out.is_dir() else []:
        assert ".tmp" not in file.name, f"left behind: {file.name}"
        text = file.read_text("utf-8")
        if file.suffix == ".json" or file.name == ".himga-run":
            json.loads(text)
        elif file.name == "results.jsonl":
            [json.loads(line) for line in text.splitlines()]
        elif file.name in ("checkpoint.jsonl", VERDICTS):
            [json.loads(line) for line in text.split("\n")[:-1]]


def _finish(code: int, stderr: str, reference: _Reference) -> None:
    """Unless the run finished, go on as its message says (``--resume`` or a rerun); then
    the reference results."""
    if code != 0:
        gc.collect()  # in process, a lock file left in an interrupted frame is closed here
        again = [*RUN, "--resume"] if "--resume" in stderr else RUN
        code, again_stderr = run_cli(again)
        assert code == 0, again_stderr
    assert _results(Path("out")) == reference.results


class _Interrupt:
    """Ctrl-C at the ``at``-th call of a himga function in the main thread, while active."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.calls = 0
        #: The file of the function the interrupt was raised in (``""``: not raised).
        self.raised_in = ""

    @property
    def stopped(self) -> bool:
        return self.calls >= self.at

    def _trace(self, frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code.co_filename.startswith(HIMGA_SOURCE):
            self.calls += 1
            if self.calls == self.at:
                sys.settrace(None)
                self.raised_in = frame.f_code.co_filename
                raise KeyboardInterrupt

    def __enter__(self) -> None:
        sys.settrace(self._trace)

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)


class _Disk:
    """A disk with ``free`` bytes left under ``root``: a write that does not fit writes
    what fits, then fails with ``ENOSPC``, as a full disk does."""

    def __init__(self, root: Path, free: int) -> None:
        self.root = root.resolve()
        self.free = free
        self.open = builtins.open
        self._patch = pytest.MonkeyPatch()

    @property
    def stopped(self) -> bool:
        return self.free == 0

    def __enter__(self) -> None:
        self._patch.setattr(builtins, "open", self.opener)
        self._patch.setattr(io, "open", self.opener)

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()

    def opener(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = self.open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        if writing and not isinstance(file, int) and self.root in Path(file).resolve().parents:
            return _Filling(handle, self)
        return handle


class _Filling:
    def __init__(self, handle: Any, disk: _Disk) -> None:
        self._handle = handle
        self._disk = disk

    def write(self, data: Any) -> int:
        size = len(data.encode("utf-8") if isinstance(data, str) else data)
        if size > self._disk.free:
            self._handle.write(data[: self._disk.free])
            self._handle.flush()
            self._disk.free = 0
            raise OSError(errno.ENOSPC, "No space left on device", self._handle.name)
        self._disk.free -= size
        written: int = self._handle.write(data)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _Filling:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["ctrl-c", "disk full"])
@TWO_RUNS_EACH
@given(data=st.data())
def test_a_run_stopped_anywhere_says_so_in_one_line_tears_nothing_and_resumes_to_its_results(
    reference: _Reference, stop: str, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as scratch, cwd(Path(scratch)):
        stopper: _Interrupt | _Disk
        said: tuple[str, ...]
        if stop == "ctrl-c":
            # Call 1 is main() itself: an interrupt there is Python's, before himga runs.
            stopper = _Interrupt(data.draw(st.integers(2, reference.calls), label="at call"))
            status, said = 130, ("himga eval: interrupted (Ctrl-C): ", "himga: interrupted")
        else:
            stopper = _Disk(Path(scratch), data.draw(st.integers(0, reference.written)))
            status, said = 2, ("himga eval: error: cannot write ",)
        with stopper:
            code, stderr = run_cli(RUN)
        assert "Traceback" not in stderr, stderr
        # A Ctrl-C while main() undoes its os._exit guard comes after the command finished
        # and said so: its own status stands (test_ctrl_c_after_the_command_finished_...).
        after_the_end = isinstance(stopper, _Interrupt) and stopper.raised_in.endswith(
            "_exit_guard.py"
        )
        # (Threads make the call count vary a little: the run may end before the interrupt.)
        if stopper.stopped and not (after_the_end and code == 0):
            assert code == status, stderr
            lines = stderr.strip().splitlines()
            assert len(lines) == 1, stderr
            assert lines[0].startswith(said), stderr
            if stop == "disk full":  # naming the run's file, not a temporary one
                assert "No space left on device" in lines[0], stderr
                assert ".tmp" not in lines[0], stderr
                assert "cannot write out/" in lines[0], stderr
        else:
            assert code == 0, stderr
        _assert_untorn(Path("out"))
        _finish(code, stderr, reference)


def _as_older_run(out: Path) -> dict[str, Any]:
    """Turn the finished run in ``out`` into one written before ``verdicts.jsonl``: its one
    judge's verdicts in ``judge_cache.json``, as older himga wrote them; those verdicts."""
    (verdicts,) = read_verdicts(out / VERDICTS, pytest.fail).verdicts.values()
    (out / VERDICTS).unlink()
    (out / JUDGE_CACHE).write_text(json_text(verdicts), "utf-8")
    return verdicts


def test_a_torn_judge_cache_of_an_older_run_is_said_and_its_whole_verdicts_kept_on_resume(
    reference: _Reference, tmp_path: Path
) -> None:
    with cwd(tmp_path):
        assert run_cli(RUN)[0] == 0
        whole = _as_older_run(Path("out"))
        cache = Path("out") / JUDGE_CACHE
        text = cache.read_text("utf-8")
        cut = text[: text.index(",") + 2]  # the first verdict and half of the second
        cache.write_text(cut, "utf-8")
        code, stderr = run_cli([*RUN, "--resume"])
        assert code == 0, stderr
        assert f"{cache}: invalid JSON" in stderr
        assert "kept the 1 verdicts before the damage" in stderr
        assert _results(Path("out")) == reference.results
        # The one kept is not asked again; every verdict is in the record now.
        (recorded,) = read_verdicts(Path("out") / VERDICTS, pytest.fail).verdicts.values()
        assert recorded.items() <= whole.items()
        assert len(recorded) == len(whole) - 1


def _is_judging(request: ChatRequest) -> bool:
    return "label an answer" in str(request[-1]["content"])


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_9_while_judging_keeps_every_verdict_given_and_asks_none_again(
    reference: _Reference, tmp_path: Path
) -> None:
    """The judge answers one of the three distinct requests (the two conversations are
    alike), then stalls; the run is killed. The resumed run asks only the other two and
    ends with the same results."""
    release = threading.Event()
    judged: list[str] = []

    def judge_one_then_stall(request: ChatRequest) -> str:
        if _is_judging(request):
            judged.append(str(request[-1]["content"]))
            if len(judged) > 1:
                release.wait(60)
        return echo_responder(request)

    with (
        offline_cli(tmp_path) as patch,
        FakeLLMServer(responder=judge_one_then_stall) as server,
        cwd(tmp_path),
    ):
        patch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        child = subprocess.Popen(
            [sys.executable, "-m", "himga", *RUN],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        record = Path("out") / VERDICTS
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if record.exists() and '"request"' in record.read_text("utf-8"):
                break
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        _, stderr = child.communicate()
        assert child.returncode == -signal.SIGKILL, stderr
        (kept,) = read_verdicts(record, pytest.fail).verdicts.values()
        assert len(kept) == 1

        release.set()
        asked_before = len(judged)
        code, stderr = run_cli([*RUN, "--resume"])
        assert code == 0, stderr
        assert stderr == ""  # nothing damaged to say
        assert len(judged) - asked_before == 2
        assert _results(Path("out")) == reference.results
        (recorded,) = read_verdicts(record, pytest.fail).verdicts.values()
        assert len(recorded) == 3
        assert kept.items() <= recorded.items()


def test_a_damaged_journal_line_is_said_and_the_verdicts_before_it_kept(tmp_path: Path) -> None:
    journal = tmp_path / JUDGE_JOURNAL
    journal.write_text('["a", {"label": 1}]\n["b", 0]\nnot json\n["c", 1]\n["d"', "utf-8")
    said: list[str] = []
    assert read_journal(journal, said.append) == {"a": {"label": 1}, "b": 0}
    assert said == [
        f"{journal}:3: not a [key, verdict] line: kept the 2 verdicts before it; "
        "the other answers are judged again"
    ]
    torn = tmp_path / "torn.jsonl"
    torn.write_text('["a", 1]\n["b", 2', "utf-8")  # a kill mid-write: not damage
    assert read_journal(torn, pytest.fail) == {"a": 1}
    assert read_journal(tmp_path / "missing.jsonl", pytest.fail) == {}


@given(st.dictionaries(st.text(), st.integers(), max_size=4), st.lists(st.text(), max_size=6))
def test_the_record_holds_each_verdict_the_moment_it_is_set(
    before: dict[str, int], keys: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / VERDICTS
        with VerdictRecord(path, "p:m:official", before) as verdicts:
            for number, key in enumerate(keys):
                verdicts[key] = number
                # what a kill -9 now would leave: what was known plus the record's lines
                left = read_verdicts(path, pytest.fail).verdicts.get("p:m:official", {})
                assert {**before, **left} == dict(verdicts)
        assert {**before, **read_verdicts(path, pytest.fail).verdicts.get("p:m:official", {})} == {
            **before,
            **{k: n for n, k in enumerate(keys)},
        }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(), json_values, max_size=6), st.data())
def test_leading_entries_of_a_cut_object_are_whole_entries_of_it(
    entries: dict[str, Any], data: st.DataObject
) -> None:
    text = json_text(entries)
    assert leading_entries(text) == entries
    cut = data.draw(st.integers(0, len(text)), label="cut at")
    kept = leading_entries(text[:cut])
    assert kept.items() <= entries.items()
    assert list(kept) == list(entries)[: len(kept)]


@pytest.mark.slow
def test_a_full_disk_under_the_llm_cache_fails_calls_not_the_run(
    reference: _Reference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: LLMCache, key: str, completion: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with cwd(tmp_path):
        with monkeypatch.context() as patch:
            patch.setattr(LLMCache, "put", full)
            code, stderr = run_cli([*RUN, "--llm-cache", "llm.sqlite"])
        assert "Traceback" not in stderr, stderr
        assert code == 3, stderr
        assert "database or disk is full" in stderr
        assert "--resume" in stderr
        _assert_untorn(Path("out"))
        _finish(code, stderr, reference)


@pytest.mark.parametrize("command", ["report", "compare", "merge", "datasets"])
def test_ctrl_c_in_any_other_command_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    module = {"report": _report, "compare": _compare, "merge": _merge, "datasets": _datasets}
    monkeypatch.setattr(module[command], "run", interrupted)
    argv = {
        "datasets": ["datasets"],
        "report": ["report", "r"],
        "merge": ["merge", "r", "--out", "m"],
    }
    code, stderr = run_cli(argv.get(command, [command, "a", "b"]))
    assert (code, stderr) == (130, "himga: interrupted (Ctrl-C)\n")


def test_ctrl_c_after_the_command_finished_keeps_its_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while main() undoes its guards, the command done and its output printed: the
    command's own status, not 130 with "interrupted" (which had a finished run's user rerun
    it and be refused as over an existing run)."""
    import contextlib

    import himga._cli as cli

    @contextlib.contextmanager
    def interrupted_on_exit() -> Iterator[None]:
        yield
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "exit_raises", interrupted_on_exit)
    assert cli.main(["memories"]) == 0
    assert "interrupted" not in capsys.readouterr().err

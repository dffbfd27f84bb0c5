"""``himga check``: one line per contract, exit 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from himga._cli import main
from himga._cli._check import BROKEN_PIPE
from himga.testing import CONTRACTS
from himga.testing._harness import CANARY
from tests.mutants import BROKEN, BROKEN_IF_DETERMINISTIC, LEGAL

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Deterministic in CI: the verdicts below must not depend on a lucky seed.
FAST = ["--max-examples", "25", "--derandomize"]


def _verdicts(output: str) -> dict[str, str]:
    verdicts = {}
    for line in output.splitlines():
        words = line.split()
        if words and words[0] in ("pass", "FAIL", "skip", "n/a"):
            verdicts[words[1]] = words[0]
    return verdicts


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_memory_fails_its_contract(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    contract_id = BROKEN[name][1]
    code = main(["check", f"tests.mutants:{name}", *FAST, "--contract", contract_id])
    out = capsys.readouterr().out
    assert code == 1, out
    verdicts = _verdicts(out)
    assert verdicts[contract_id] == "FAIL", out
    if contract_id != "protocol-shape":
        assert "      m1 = factory()" in out  # the reproducer follows the FAIL line


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["MissingReset", "CrashesOnBlankQuery", "ResetOnlyHides", "SearchIndexSurvivesReset"]
)
def test_every_contract_gets_one_line_in_order(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    contract_id = BROKEN[name][1]
    code = main(["check", f"tests.mutants:{name}", *FAST])
    out = capsys.readouterr().out
    assert code == 1, out
    verdicts = _verdicts(out)
    assert list(verdicts) == [contract.id for contract in CONTRACTS]  # one line each, in order
    assert verdicts[contract_id] == "FAIL", out
    if contract_id == "protocol-shape":
        assert set(list(verdicts.values())[1:]) == {"skip"}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_memories_pass(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", f"tests.mutants:{name}", *FAST])
    out = capsys.readouterr().out
    assert code == 0, out
    verdicts = _verdicts(out)
    assert set(verdicts.values()) <= {"pass", "n/a"}
    searchable = callable(getattr(LEGAL[name](), "search", None))
    assert verdicts["search-returns-hits"] == ("pass" if searchable else "n/a")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN_IF_DETERMINISTIC))
def test_deterministic_flag_demands_determinism(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    contract_id = BROKEN_IF_DETERMINISTIC[name][1]
    assert main(["check", f"tests.mutants:{name}", *FAST]) == 0
    capsys.readouterr()
    assert main(["check", f"tests.mutants:{name}", *FAST, "--deterministic"]) == 1
    out = capsys.readouterr().out
    assert "deterministic" in out.splitlines()[0]
    assert _verdicts(out)[contract_id] == "FAIL", out


@pytest.mark.slow
def test_json_gives_one_object_per_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "tests.mutants:CrashesOnBlankQuery", *FAST, "--json"])
    assert code == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in records] == [contract.id for contract in CONTRACTS]
    by_id = {r["id"]: r for r in records}
    failed = by_id["retrieve-empty-query"]
    assert failed["status"] == "fail"
    assert failed["raised_at"].startswith("tests/mutants.py:")
    assert "m1.retrieve('')" in failed["reproducer"]
    assert by_id["protocol-shape"]["status"] == "pass"
    assert by_id["search-returns-hits"]["status"] == "n/a"
    assert all(isinstance(r["seconds"], float) for r in records)


def test_contract_selects_contracts(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "tests.mutants:ResetKeepsLast", *FAST, "--contract", "reuse-after-reset"]
    assert main([*argv, "--contract", "retrieve-returns-str"]) == 0
    assert list(_verdicts(capsys.readouterr().out)) == [
        "retrieve-returns-str",
        "reuse-after-reset",
    ]
    assert main(["check", "null", "--contract", "reset"]) == 2
    assert "unknown contract id 'reset'" in capsys.readouterr().err


@pytest.mark.slow
def test_seed_makes_the_run_repeatable(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "tests.mutants:ResetKeepsLast", "--max-examples", "25", "--seed", "11"]
    outputs = []
    for _ in range(2):
        assert main(argv) == 1
        outputs.append(CANARY.sub("<canary>", capsys.readouterr().out))
    assert outputs[0] == outputs[1]


@pytest.mark.slow
def test_the_crash_site_in_the_plugin_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "tests.mutants:CrashesOnBlankQuery", *FAST]) == 1
    fail = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL"))
    assert "(at tests/mutants.py:" in fail
    assert "in retrieve)" in fail


@pytest.mark.integration
def test_a_closed_stdout_exits_quietly() -> None:
    # `himga check X | head -1`: the reader closes the pipe after the first line.
    process = subprocess.Popen(
        [_himga(), "check", "tests.mutants:ResetKeepsLast", *FAST],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    code = process.wait()
    assert code == BROKEN_PIPE, stderr
    assert code not in (0, 1)
    assert stderr == ""


@pytest.mark.slow
def test_registered_name_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "null", *FAST]) == 0
    assert "pass  instance-isolation" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_memory", "unknown memory 'no_such_memory'"),
        ("himga_no_such_module:X", "no module named 'himga_no_such_module'"),
        ("himga.memory:Nope", "has no attribute 'Nope'"),
        ("a:b:c", "malformed"),
    ],
)
def test_load_errors_exit_2_with_a_clear_message(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("himga check: error: ")
    assert message in err


def test_import_error_inside_the_plugin_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "himga_cli_broken_plugin.py").write_text("import himga_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "himga_cli_broken_plugin:Memory"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "himga_missing_dependency" in err
    assert 'himga_cli_broken_plugin.py", line 1' in err


@pytest.mark.parametrize("argv", [["check"], ["check", "null", "--max-examples", "0"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage: himga check" in capsys.readouterr().err


def _himga() -> str:
    # The console script installed with the project (what `uv run himga` runs).
    script = Path(sys.executable).with_name("himga")
    assert script.exists(), f"the himga console script is not installed next to {sys.executable}"
    return str(script)


@pytest.mark.slow
@pytest.mark.integration
def test_console_script_end_to_end() -> None:
    broken = subprocess.run(
        [_himga(), "check", "tests.mutants:ClassLevelList", *FAST],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert broken.returncode == 1, broken.stderr
    assert "FAIL  instance-isolation" in broken.stdout
    fine = subprocess.run(
        [_himga(), "check", "himga.memory:NullMemory", *FAST],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert fine.returncode == 0, fine.stdout + fine.stderr


@pytest.mark.integration
def test_missing_testing_extra_is_a_clear_error() -> None:
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"  # as if not installed
        "from himga._cli import main; sys.exit(main(['check', 'null']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")},
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'himga[testing]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_python_dash_m_himga_is_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "himga", "check", "tests.mutants:MissingReset"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL  protocol-shape  reset: missing" in result.stdout
    usage = subprocess.run(
        [sys.executable, "-m", "himga"], capture_output=True, text=True, check=False
    )
    assert usage.returncode == 2
    assert "usage: himga" in usage.stderr

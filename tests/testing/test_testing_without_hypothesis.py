"""What of the kit works without Hypothesis (the ``testing`` extra), and what says to install it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from himga._cli import main
from himga.testing import CONTRACTS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Run as if Hypothesis were not installed: an import of it fails as a missing module does.
HIDE = "import sys; sys.modules['hypothesis'] = None\n"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")},
    )


@pytest.mark.integration
def test_import_himga_testing_never_imports_hypothesis() -> None:
    result = _python("import sys, himga.testing\nprint('hypothesis' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.integration
def test_the_catalogue_and_the_shape_check_work_without_hypothesis() -> None:
    code = HIDE + (
        "from himga.testing import CONTRACTS, DEFAULT_MAX_EXAMPLES, ContractViolation, "
        "check_protocol_shape\n"
        "class NoReset:\n"
        "    def ingest(self, message, session): pass\n"
        "    def retrieve(self, query): return ''\n"
        "print(len(CONTRACTS), DEFAULT_MAX_EXAMPLES)\n"
        "print(check_protocol_shape(NoReset))\n"
        "print(ContractViolation('reset-clears', 'leaked').contract_id)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{len(CONTRACTS)} 100",
        "['reset: missing (the protocol calls reset())']",
        "reset-clears",
    ]


@pytest.mark.integration
@pytest.mark.parametrize(
    "name",
    ["check_memory", "check_contract", "MemoryContract", "memory_state_machine", "texts"],
)
def test_what_needs_hypothesis_names_the_extra(name: str) -> None:
    code = HIDE + (
        "from himga._extras import MissingExtraError\n"
        "try:\n"
        f"    from himga.testing import {name}\n"
        "except MissingExtraError as error:\n"
        "    print(error)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert f"himga.testing.{name} needs" in result.stdout
    assert "pip install 'himga[testing]'" in result.stdout


@pytest.mark.integration
def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import himga.testing

    with pytest.raises(AttributeError, match="no attribute 'check_memroy'"):
        getattr(himga.testing, "check_memroy")  # noqa: B009  # the typo is the test


@pytest.mark.integration
def test_fake_llm_help_and_check_list_work_without_hypothesis() -> None:
    code = HIDE + (
        "from himga._cli import main\n"
        "try:\n"
        "    main(['fake-llm', '--help'])\n"
        "except SystemExit as exit:\n"
        "    print('help exit', exit.code)\n"
        "try:\n"
        "    main(['check', '--list'])\n"
        "except SystemExit as exit:\n"
        "    print('list exit', exit.code)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "usage: himga fake-llm" in result.stdout
    assert "help exit 0" in result.stdout
    assert "list exit 0" in result.stdout
    for contract in CONTRACTS:
        assert f"\n{contract.id}\n" in result.stdout


def test_check_list_prints_each_contract_and_promise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["check", "--list"])
    assert caught.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0::2] == [contract.id for contract in CONTRACTS]
    assert [line.strip() for line in lines[1::2]] == [c.summary for c in CONTRACTS]

"""The pytest plugin: ``pytest --himga-memory SPEC`` gives one test per contract, no test code.

Each run is a pytest subprocess in an empty project (its own rootdir and a
conftest that loads a derandomized profile, which the plugin must honour).
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from himga._cli import main
from himga.memory import SearchableMemory, resolve_memory
from himga.testing import CONTRACTS
from tests.mutants import BROKEN, BROKEN_IF_DETERMINISTIC

# Each run is a pytest subprocess running the kit.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFTEST = """\
from hypothesis import settings

settings.register_profile("plugin-test", max_examples=10, derandomize=True, deadline=None)
settings.load_profile("plugin-test")
"""
# Each observed bug of the issue, the flaky-state ones, and the legal look-alikes.
CAUGHT = [
    "SearchIndexSurvivesReset",
    "LineCacheSurvivesReset",
    "SpeakersSurviveReset",
    "SessionsSurviveReset",
    "ResetOnlyHides",
    "ClassLevelList",
    "MutableDefault",
    "ModuleLevelStore",
    "CrashesOnBlankQuery",
    "MissingReset",
]
PASSING = ["tests.mutants:BoundInInit", "tests.mutants:ProxyMemory", "null"]


def _pytest(tmp_path: Path, *args: str) -> tuple[int, dict[str, dict[str, str]], str]:
    """Exit code, {spec: {contract id: outcome}}, and output of a pytest run in ``tmp_path``.

    The outcome is ``pass``, ``skipped``, or the id in the ``[<id>]`` a failure names.
    """
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    report = tmp_path / "report.xml"
    isolated = ["--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini")]
    options = ["-p", "no:cacheprovider", "--junitxml", str(report)]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), *isolated, *options, *args],
        cwd=PROJECT_ROOT,  # tests.mutants is importable from here, as a plug-in's own package
        capture_output=True,
        text=True,
        check=False,
    )
    outcomes: dict[str, dict[str, str]] = {}
    if report.exists():
        for case in ElementTree.parse(report).iter("testcase"):
            # pytest writes the node name "himga[<spec>]::<contract id>" (its bracket kept)
            spec, _, contract_id = case.attrib["name"].partition("]::")
            children = {child.tag: child for child in case}
            outcome = "skipped" if "skipped" in children else "pass"
            if "failure" in children:
                message = children["failure"].attrib.get("message", "")
                outcome = message[message.index("[") + 1 : message.index("]")]
            outcomes.setdefault(spec.removeprefix("himga["), {})[contract_id.rstrip("]")] = outcome
    return result.returncode, outcomes, result.stdout + result.stderr


def _passing(spec: str) -> dict[str, str]:
    """The outcome of each contract for a memory that honours them all: ``search-returns-hits``
    is skipped (n/a) for a memory without ``search``."""
    searchable = isinstance(resolve_memory(spec).create(), SearchableMemory)
    return {
        contract.id: "skipped" if contract.id == SEARCH and not searchable else "pass"
        for contract in CONTRACTS
    }


SEARCH = "search-returns-hits"


def _specs(names: list[str]) -> list[str]:
    return [arg for name in names for arg in ("--himga-memory", f"tests.mutants:{name}")]


def test_each_broken_memory_fails_exactly_one_test_under_its_id(tmp_path: Path) -> None:
    passing = [arg for spec in PASSING for arg in ("--himga-memory", spec)]
    code, outcomes, output = _pytest(tmp_path, *_specs(CAUGHT), *passing)
    assert code == 1, output
    for name in CAUGHT:
        results = outcomes[f"tests.mutants:{name}"]
        assert list(results) == [contract.id for contract in CONTRACTS], output
        # One root cause, one failing test (the first to meet it), naming the contract.
        failed = [outcome for outcome in results.values() if outcome not in ("pass", "skipped")]
        assert failed == [BROKEN[name][1]], (name, results)
    for spec in PASSING:
        assert outcomes[spec] == _passing(spec), (spec, outcomes[spec])
    assert "minimal reproducer:" in output


def test_the_plugin_and_himga_check_give_every_contract_the_same_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The issue: they disagreed on which contract a leaky memory breaks, and the plugin
    # showed search-returns-hits PASSED for a memory without search (the CLI: n/a).
    names = ["SessionsSurviveReset", "ModuleLevelStore", "ClassLevelList", "MissingReset"]
    specs = [f"tests.mutants:{name}" for name in names] + ["null"]
    _, outcomes, _ = _pytest(tmp_path, *[a for spec in specs for a in ("--himga-memory", spec)])
    as_plugin = {"pass": "pass", "FAIL": None, "skip": "skipped", "n/a": "skipped"}
    for spec in specs:
        main(["check", spec, "--max-examples", "10", "--derandomize"])  # the conftest's profile
        lines = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
        verdicts = {w[1]: w[0] for w in lines if w and w[0] in as_plugin}  # not reproducers
        expected = {
            contract_id: as_plugin[verdict] or contract_id
            for contract_id, verdict in verdicts.items()
        }
        assert outcomes[spec] == expected, (spec, verdicts)
    report = (tmp_path / "report.xml").read_text()
    assert "n/a: the memory has no search method" in report  # null has no search


def test_one_root_cause_skips_the_tests_it_blocks(tmp_path: Path) -> None:
    _, outcomes, _ = _pytest(tmp_path, *_specs(["MissingReset"]))
    results = outcomes["tests.mutants:MissingReset"]
    assert results["protocol-shape"] == "protocol-shape"
    assert set(list(results.values())[1:]) == {"skipped"}, results
    assert "protocol-shape fails first" in (tmp_path / "report.xml").read_text()


def test_deterministic_option(tmp_path: Path) -> None:
    names = sorted(BROKEN_IF_DETERMINISTIC)
    code, outcomes, output = _pytest(
        tmp_path, "--himga-deterministic", *_specs([*names, "ListMemory"])
    )
    assert code == 1, output
    for name in names:
        results = outcomes[f"tests.mutants:{name}"]
        failed = [outcome for outcome in results.values() if outcome not in ("pass", "skipped")]
        assert failed == [BROKEN_IF_DETERMINISTIC[name][1]], (name, results)
    assert outcomes["tests.mutants:ListMemory"] == _passing("tests.mutants:ListMemory")


def test_the_plugin_is_inert_unless_asked(tmp_path: Path) -> None:
    code, outcomes, output = _pytest(tmp_path)
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED, output
    assert outcomes == {}


def test_an_unknown_memory_is_a_usage_error(tmp_path: Path) -> None:
    code, _, output = _pytest(tmp_path, "--himga-memory", "no_such_memory")
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert "--himga-memory no_such_memory: unknown memory 'no_such_memory'" in output


def test_a_hanging_memory_fails_its_contract_at_the_deadline(tmp_path: Path) -> None:
    spec = "tests.trust_memories:HangsAlways"
    code, outcomes, output = _pytest(
        tmp_path, "--himga-memory", spec, "--himga-memory-timeout", "0.2"
    )
    assert code == 1, output
    failed = [o for o in outcomes[spec].values() if o not in ("pass", "skipped")]
    assert failed == ["retrieve-returns-str"], outcomes[spec]
    assert "retrieve did not return within 0.2 s" in output
    bad, _, output = _pytest(tmp_path, "--himga-memory", spec, "--himga-memory-timeout", "inf")
    assert bad == pytest.ExitCode.USAGE_ERROR, output
    assert "expected seconds between" in output

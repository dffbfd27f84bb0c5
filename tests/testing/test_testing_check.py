"""check_memory / check_contract: every broken memory is caught under its id, legal ones pass."""

from __future__ import annotations

import functools
import itertools
import pickle
import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from hypothesis import Phase, settings

from himga.data.schema import Message, Session
from himga.memory import BaseMemory, NullMemory
from himga.testing import (
    CONTRACTS,
    DEFAULT_MAX_EXAMPLES,
    ContractViolation,
    check_contract,
    check_memory,
)
from himga.testing._contracts import check_protocol_shape
from himga.testing._harness import CANARY
from tests.mutants import (
    BROKEN,
    BROKEN_IF_DETERMINISTIC,
    LEGAL,
    ListMemory,
    ResetOnlyHides,
)

# The profile of the suite (dev: 25, ci: 100) sets how hard the kit searches here.
EXAMPLES = settings().max_examples
# Verdicts on broken memories must not depend on the seed: those searches are fixed
# (derandomize=True; bench/bench_check.py measures the kit under random seeds).


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_check_memory_flags_each_broken_memory_under_its_contract(name: str) -> None:
    factory, contract_id = BROKEN[name]
    with pytest.raises(ContractViolation) as caught:
        check_memory(factory, max_examples=EXAMPLES, derandomize=True)
    assert caught.value.contract_id == contract_id, str(caught.value)
    assert f"[{contract_id}]" in str(caught.value)


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_check_memory_passes_legal_memories(name: str) -> None:
    check_memory(LEGAL[name], max_examples=EXAMPLES)


def test_check_memory_passes_null_memory() -> None:
    check_memory(NullMemory, max_examples=EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BROKEN_IF_DETERMINISTIC))
def test_determinism_is_demanded_only_when_declared(name: str) -> None:
    factory, contract_id = BROKEN_IF_DETERMINISTIC[name]
    check_memory(factory, max_examples=EXAMPLES)  # legal: nothing new demanded by default
    with pytest.raises(ContractViolation) as caught:
        check_memory(factory, max_examples=EXAMPLES, derandomize=True, deterministic=True)
    assert caught.value.contract_id == contract_id, str(caught.value)
    assert "deterministic=True" in caught.value.problem


def test_a_random_memory_cannot_declare_determinism() -> None:
    # Which id depends on what the randomness looks like (shared state, or a reset
    # instance unlike a fresh one); that it fails does not, with a fixed seed.
    with pytest.raises(ContractViolation) as caught:
        check_memory(
            LEGAL["RandomSampleMemory"], max_examples=EXAMPLES, derandomize=True, deterministic=True
        )
    assert caught.value.contract_id in {"reset-clears", "instance-isolation"}
    assert "deterministic=True" in caught.value.problem


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["ListMemory", "QueryHeaderMemory", "SearchableListMemory", "ProxyMemory"]
)
def test_deterministic_legal_memories_pass_the_deterministic_mode(name: str) -> None:
    check_memory(LEGAL[name], max_examples=EXAMPLES, deterministic=True)


def test_factory_may_be_any_zero_argument_callable() -> None:
    made: list[BaseMemory] = []

    def factory() -> BaseMemory:
        made.append(ListMemory())
        return made[-1]

    check_memory(factory, max_examples=5)
    assert len(made) > 5  # a fresh memory per generated program


def test_violation_names_contract_and_shrunk_reproducer() -> None:
    with pytest.raises(ContractViolation) as caught:
        check_contract(ResetOnlyHides, "reset-clears", max_examples=EXAMPLES, derandomize=True)
    violation = caught.value
    assert violation.contract_id == "reset-clears"
    lines = violation.reproducer.splitlines()
    assert lines[:3] == [
        "from himga.data.schema import Message, Session",
        "from tests.mutants import ResetOnlyHides as factory",
        "",
    ]
    assert "m1.reset()" in lines
    # Shrunk: one ingest before the reset is all the violation needs.
    ingests_before_reset = lines[: lines.index("m1.reset()")]
    assert sum(".ingest(" in line for line in ingests_before_reset) == 1, violation.reproducer
    assert lines[-1].startswith("# expected: ")
    assert str(violation).count("minimal reproducer:") == 1
    assert isinstance(violation, AssertionError)


def test_the_reproducer_is_runnable_python() -> None:
    with pytest.raises(ContractViolation) as caught:
        check_contract(ResetOnlyHides, "reset-clears", max_examples=EXAMPLES, derandomize=True)
    namespace: dict[str, Any] = {}
    exec(compile(caught.value.reproducer, "<reproducer>", "exec"), namespace)
    # Replayed, the snippet's memory leaks the secret the report names.
    secret = CANARY.findall(caught.value.problem)[0]
    assert secret in namespace["m1"].retrieve(secret.replace("s", "c", 1))
    crash = BROKEN["CrashesOnBlankQuery"][0]
    with pytest.raises(ContractViolation) as crashed:
        check_contract(crash, "retrieve-empty-query", max_examples=5)
    with pytest.raises(IndexError):  # the snippet itself raises what the memory raised
        exec(compile(crashed.value.reproducer, "<reproducer>", "exec"), {})


class BlankQueryCrashes(ListMemory):
    """Crashes on a blank query, with its ``label``: keyword arguments reach the instance."""

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label = label

    def retrieve(self, query: str, /) -> str:
        if not query.strip():
            raise IndexError(self.label)
        return super().retrieve(query)


@pytest.mark.parametrize("wrapped", [False, True], ids=["partial", "wrapped partial"])
def test_the_reproducer_rebuilds_keyword_arguments_and_sees_through_wrappers(
    wrapped: bool,
) -> None:
    # What `--memory-arg label=...` resolves to, and what `himga eval` hands pre-flight.
    factory: Any = functools.partial(BlankQueryCrashes, label="from --memory-arg")
    if wrapped:
        bound = factory

        def routed() -> Any:
            return bound()

        factory = functools.update_wrapper(routed, bound, updated=())
    with pytest.raises(ContractViolation) as caught:
        check_contract(factory, "retrieve-empty-query", max_examples=5)
    reproducer = caught.value.reproducer
    assert "routed" not in reproducer
    assert "factory = functools.partial(BlankQueryCrashes, label='from --memory-arg')" in (
        reproducer
    )
    with pytest.raises(IndexError, match="from --memory-arg"):
        exec(compile(reproducer, "<reproducer>", "exec"), {})


def test_the_minimal_reproducer_is_shown_first_and_once() -> None:
    # A crash is chained as the cause; no longer program may appear as context.
    with pytest.raises(ContractViolation) as caught:
        check_contract(BROKEN["CrashesOnBlankQuery"][0], "retrieve-empty-query", max_examples=25)
    shown = "".join(traceback.format_exception(caught.value))
    assert shown.count("minimal reproducer:") == 1, shown
    assert "During handling of the above exception" not in shown
    assert "(at tests/mutants.py:" in caught.value.problem  # the memory's frame


def test_memory_exceptions_are_chained() -> None:
    with pytest.raises(ContractViolation) as caught:
        check_contract(BROKEN["CrashesOnBlankQuery"][0], "retrieve-empty-query", max_examples=5)
    assert isinstance(caught.value.__cause__, IndexError)
    assert "retrieve raised IndexError" in caught.value.problem


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("AsyncRetrieve", "retrieve: is 'async def'"),
        ("MissingReset", "reset: missing"),
        ("MissingSession", "ingest: parameter 'session' is missing"),
        ("KeywordOnlySession", "ingest: parameter 'session' is keyword-only"),
        ("RequiredExtraParam", "retrieve: extra parameter 'k' has no default"),
    ],
)
def test_protocol_shape_names_method_and_parameter_before_running_anything(
    name: str, fragment: str
) -> None:
    called: list[str] = []
    broken: type[Any] = BROKEN[name][0]  # type: ignore[assignment]

    class Spied(broken):  # type: ignore[misc]
        def __getattribute__(self, attribute: str) -> Any:
            value = super().__getattribute__(attribute)
            if attribute in ("ingest", "retrieve", "reset") and callable(value):

                def spy(*args: Any) -> Any:
                    called.append(attribute)
                    return value(*args)

                functools.update_wrapper(spy, value)
                return spy
            return value

    with pytest.raises(ContractViolation) as caught:
        check_memory(Spied, max_examples=5)
    assert caught.value.contract_id == "protocol-shape"
    assert fragment in caught.value.problem
    assert caught.value.reproducer == ""
    assert called == []  # judged from signatures alone


@pytest.mark.parametrize("name", ["BoundInInit", "ProxyMemory"])
def test_protocol_shape_is_read_on_an_instance(name: str) -> None:
    assert check_protocol_shape(LEGAL[name]()) == []
    check_contract(LEGAL[name], "protocol-shape")


def test_an_instance_lacking_a_method_is_named() -> None:
    class Proxy:
        def __init__(self) -> None:
            self._inner = BROKEN["MissingReset"][0]()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    with pytest.raises(ContractViolation, match=r"reset: missing") as caught:
        check_contract(Proxy, "reset-clears")
    assert caught.value.contract_id == "protocol-shape"


def test_protocol_shape_accepts_extra_optional_and_variadic_parameters() -> None:
    for name in ("ExtraParamsMemory", "VarArgsMemory", "SubclassedMemory"):
        check_contract(LEGAL[name], "protocol-shape")


def test_protocol_shape_accepts_methods_made_by_descriptors() -> None:
    class Partial(ListMemory):
        def _retrieve(self, query: str, /, *, limit: int) -> str:
            return "\n".join(super().retrieve(query).splitlines()[:limit])

        retrieve = functools.partialmethod(_retrieve, limit=3)

    class Static(ListMemory):
        @staticmethod
        def reset() -> None:  # forgets nothing: fine for the shape
            pass

    for memory in (Partial, Partial(), Static, Static()):
        assert check_protocol_shape(memory) == [], memory
    check_memory(Partial, max_examples=5)


def test_a_property_is_not_a_method() -> None:
    class WithProperty(ListMemory):
        @property
        def reset(self) -> None:  # type: ignore[override]
            return None

    assert check_protocol_shape(WithProperty) == ["reset: is a property, not a method"]


def test_a_factory_that_raises_is_reported() -> None:
    def factory() -> BaseMemory:
        raise RuntimeError("no database")

    with pytest.raises(ContractViolation, match="factory\\(\\) raised RuntimeError: no database"):
        check_memory(factory, max_examples=5)


def test_unknown_contract_id_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown contract id 'reset'"):
        check_contract(NullMemory, "reset")


def test_contract_ids_are_stable() -> None:
    assert [contract.id for contract in CONTRACTS] == [
        "protocol-shape",
        "retrieve-returns-str",
        "retrieve-empty-query",
        "reset-clears",
        "reuse-after-reset",
        "instance-isolation",
        "search-returns-hits",
    ]
    assert DEFAULT_MAX_EXAMPLES == 100


@pytest.fixture
def hostile_profile() -> Iterator[None]:
    """A caller's profile that would, if inherited, stop the kit from generating anything."""
    previous = settings()
    settings.register_profile("himga-test-hostile", max_examples=1, phases=[Phase.explicit])
    settings.load_profile("himga-test-hostile")
    try:
        yield
    finally:
        settings.register_profile("himga-test-restore", previous)
        settings.load_profile("himga-test-restore")


@pytest.mark.usefixtures("hostile_profile")
def test_kit_settings_do_not_depend_on_the_callers_profile() -> None:
    with pytest.raises(ContractViolation, match="reset-clears"):
        check_memory(ResetOnlyHides, max_examples=EXAMPLES, derandomize=True)


def test_derandomize_makes_the_search_repeatable() -> None:
    def reproducer() -> str:
        with pytest.raises(ContractViolation) as caught:
            check_contract(
                BROKEN["CrashesOnNonAscii"][0],
                "retrieve-returns-str",
                max_examples=EXAMPLES,
                derandomize=True,
            )
        return caught.value.problem

    assert reproducer() == reproducer()


def test_a_seed_makes_the_search_repeatable() -> None:
    def problem(seed: int) -> str:
        with pytest.raises(ContractViolation) as caught:
            check_contract(
                BROKEN["ResetKeepsLast"][0], "reset-clears", max_examples=EXAMPLES, seed=seed
            )
        return CANARY.sub("<canary>", caught.value.reproducer)

    assert problem(7) == problem(7)


class _Recorder(ListMemory):
    """Records every field of every call it receives, across all instances."""

    seen: ClassVar[list[tuple[int, str, Message, Session]]] = []
    resets: ClassVar[list[int]] = []

    def ingest(self, message: Message, session: Session, /) -> None:
        self.seen.append((id(self), "ingest", message, session))
        super().ingest(message, session)

    def reset(self) -> None:
        self.resets.append(len(self.seen))
        super().reset()


def test_programs_look_like_benchmark_traffic() -> None:
    _Recorder.seen.clear()
    check_memory(_Recorder, max_examples=EXAMPLES, derandomize=True)
    messages = [message for _, _, message, _ in _Recorder.seen]
    sessions = [session for _, _, _, session in _Recorder.seen]
    turn_ids = [m.turn_id for m in messages if m.turn_id is not None]
    assert any(re.fullmatch(r"D\d+:\d+", t) for t in turn_ids)  # LoCoMo
    assert any(re.fullmatch(r"(answer|sharegpt)_\w+:\d+", t) for t in turn_ids)  # LongMemEval
    assert {"Caroline", "Melanie", "user", "assistant"} <= {m.role for m in messages}
    dates = {s.date_str for s in sessions}
    assert None in dates
    assert "1:56 pm on 8 May, 2023" in dates  # LoCoMo's raw format
    assert "2023/05/20 (Sat) 02:21" in dates  # LongMemEval's
    assert any(s.date is not None for s in sessions)
    # The same ids come back after resets and in other instances, as in real runs.
    after_reset = {m.turn_id for _, _, m, _ in _Recorder.seen[min(_Recorder.resets) :]}
    assert after_reset & set(turn_ids[: min(_Recorder.resets)])
    owners: dict[str, set[int]] = {}
    for owner, _, message, _ in _Recorder.seen:
        if message.turn_id is not None:
            owners.setdefault(message.turn_id, set()).add(owner)
    assert any(len(instances) > 1 for instances in owners.values())


@pytest.mark.parametrize("field", ["role", "session_id", "date_str", "turn_id"])
def test_canaries_in_every_field_catch_a_field_that_survives_reset(field: str) -> None:
    class FieldSurvivesReset(ListMemory):
        def __init__(self) -> None:
            super().__init__()
            self.values: list[str] = []

        def ingest(self, message: Message, session: Session, /) -> None:
            super().ingest(message, session)
            owner = session if field in ("session_id", "date_str") else message
            self.values.append(str(getattr(owner, field)))

        def retrieve(self, query: str, /) -> str:
            found = super().retrieve(query)
            return f"{found}\n{field}s: {' '.join(self.values)}" if found else ""

    with pytest.raises(ContractViolation) as caught:
        check_memory(FieldSurvivesReset, max_examples=EXAMPLES, derandomize=True)
    assert caught.value.contract_id == "reset-clears", str(caught.value)


def test_violations_survive_pickling() -> None:
    violation = ContractViolation("reset-clears", "leaked", "m1 = factory()")
    copy = pickle.loads(pickle.dumps(violation))
    assert (copy.contract_id, copy.problem, copy.reproducer) == (
        "reset-clears",
        "leaked",
        "m1 = factory()",
    )
    assert str(copy) == str(violation)


@pytest.mark.integration
def test_the_kit_without_hypothesis_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"  # as if the extra were not installed
        "from himga._extras import MissingExtraError\n"
        "import himga.testing\n"
        "try:\n"
        "    himga.testing.check_memory\n"
        "except MissingExtraError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "pip install 'himga[testing]'" in result.stdout


def test_a_failure_that_does_not_replay_is_reported_as_outside_state() -> None:
    calls = itertools.count()

    class FailsOnce(ListMemory):
        def retrieve(self, query: str, /) -> str:
            if next(calls) == 3:  # module-level state: the failure cannot be replayed
                raise RuntimeError("once")
            return super().retrieve(query)

    with pytest.raises(ContractViolation, match="not when the same calls were replayed") as caught:
        check_contract(FailsOnce, "retrieve-returns-str", max_examples=EXAMPLES)
    assert caught.value.contract_id == "retrieve-returns-str"
    assert "retrieve raised RuntimeError: once" in caught.value.problem


def test_a_failure_that_does_not_replay_keeps_the_id_it_broke() -> None:
    calls = itertools.count()

    class CrashesOnce(ListMemory):
        def retrieve(self, query: str, /) -> str:
            if next(calls) == 0:
                raise RuntimeError("once")
            return super().retrieve(query)

    with pytest.raises(ContractViolation, match="not when the same calls were replayed") as caught:
        check_contract(CrashesOnce, "reset-clears", max_examples=EXAMPLES)
    # A crash is never a reset-clears violation, whichever program found it.
    assert caught.value.contract_id in {"retrieve-returns-str", "reuse-after-reset"}
    assert "retrieve raised RuntimeError: once" in caught.value.problem

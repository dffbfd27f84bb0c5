"""``--memory-arg`` values typed by the memory's own annotations: ``infer=False`` is the
boolean false, never the (true) string ``'False'`` (issue 34, item 10)."""

from __future__ import annotations

from typing import Any

import pytest

from himga.memory import KeywordMemory, MemoryArgumentError, resolve_memory
from tests.cli_support import run_cli

pytestmark = pytest.mark.usefixtures("loopback_only")
HERE = "tests.memory.test_memory_arguments"


class Flagged(KeywordMemory):
    """A memory with a flag, an optional flag, an optional text and an `Any` parameter."""

    def __init__(
        self,
        k: int = 10,
        *,
        shout: bool = False,
        maybe: bool | None = None,
        tag: str | None = None,
        loose: Any = None,  # a type himga cannot use: as if undeclared
    ) -> None:
        super().__init__(k)
        self.shout, self.maybe, self.tag, self.loose = shout, maybe, tag, loose


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("mem0", "infer"),
        ("langmem", "manager"),
        ("mcp", "split_query"),
        (f"{HERE}:Flagged", "shout"),
    ],
)
@pytest.mark.parametrize(
    ("given", "meant"),
    [("False", False), ("false", False), ("FALSE", False), ("True", True), (False, False)],
)
def test_boolean_words_are_booleans_for_a_parameter_annotated_bool(
    spec: str, name: str, given: Any, meant: bool
) -> None:
    assert resolve_memory(spec, {name: given}).arguments == {name: meant}


def test_the_memory_is_made_with_the_boolean_not_the_string() -> None:
    memory = resolve_memory(f"{HERE}:Flagged", {"shout": "False", "maybe": "None"}).create()
    assert isinstance(memory, Flagged)
    assert (memory.shout, memory.maybe) == (False, None)
    assert resolve_memory(f"{HERE}:Flagged", {"tag": "False"}).arguments == {"tag": "False"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"shout": "maybe"},
            "memory argument shout=maybe: memory {spec!r} takes a boolean for "
            "'shout': true or false",
        ),
        (
            {"shout": 1},
            "memory argument shout=1: memory {spec!r} takes a boolean for 'shout': true or false",
        ),
        (
            {"shout": None},
            "memory argument shout=null: memory {spec!r} takes a boolean for "
            "'shout': true or false",
        ),
        (
            {"maybe": "yes"},
            "memory argument maybe=yes: memory {spec!r} takes a boolean for "
            "'maybe': true or false (or null)",
        ),
        (
            {"tag": "None"},
            "memory argument tag=None: ambiguous, memory {spec!r} may take a "
            "boolean or None for 'tag' (or himga cannot read its type): write tag=true, "
            "tag=false or tag=null (JSON)",
        ),
        (
            {"loose": "False"},
            "memory argument loose=False: ambiguous, memory {spec!r} may take "
            "a boolean or None for 'loose' (or himga cannot read its type): write loose=true, "
            "loose=false or loose=null (JSON)",
        ),
    ],
)
def test_a_bad_or_ambiguous_boolean_is_refused_naming_the_argument(
    arguments: dict[str, Any], message: str
) -> None:
    spec = f"{HERE}:Flagged"
    with pytest.raises(MemoryArgumentError) as info:
        resolve_memory(spec, arguments)
    assert str(info.value) == message.format(spec=spec)


@pytest.mark.parametrize("command", ["eval", "check"])
def test_a_bad_boolean_on_the_command_line_is_a_one_line_error(command: str) -> None:
    memory = ["--memory", "mem0"] if command == "eval" else ["mem0"]
    code, stderr = run_cli([command, *memory, "--memory-arg", "infer=maybe"])
    assert code == 2
    assert stderr == (
        f"himga {command}: error: memory argument infer=maybe: memory 'mem0' takes a boolean "
        "for 'infer': true or false\n"
    )

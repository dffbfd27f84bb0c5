"""himga's packages form layers: a module imports only from its own package or one below
it (docs/architecture.md), so there is no package-level import cycle. Checked on the
source, with ``ast``: imports at module level and inside functions count; those under
``if TYPE_CHECKING:`` do not (they never run). A deprecated alias of a name that moved up
(``himga._lazy.moved_names``) names its new module as a string, imported when used."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import himga

_SRC = Path(himga.__file__).resolve().parent

#: Bottom to top; a package may import from its own rank or a lower one.
_LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(names.split())
    for names in (
        "__init__ _errors _json _lazy _redact _exit_guard _loopback _registry",
        "_extras",
        "data",
        "llm embed",
        "memory",
        "metering",
        "agent integrations",
        "scoring",
        "benchmarks",
        "eval",
        "testing",
        "runs",
        "view",
        "_cli _pytest_plugin __main__",
    )
)
_RANK = {name: rank for rank, names in enumerate(_LAYERS) for name in names}


def _package(path: Path) -> str:
    return path.relative_to(_SRC).parts[0].removesuffix(".py")


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                skipped.update(id(sub) for sub in ast.walk(statement))
    return skipped


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, package)`` of every himga package ``path`` imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "himga":
                modules = [f"himga.{alias.name}" for alias in node.names]
            else:
                modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "himga" and len(parts) > 1 and parts[1] in _RANK:
                yield node.lineno, parts[1]


def test_every_package_has_a_layer() -> None:
    found = {_package(path) for path in _SRC.rglob("*.py")}
    assert found - set(_RANK) == set()


def test_no_package_imports_one_above_it() -> None:
    upward = []
    for path in sorted(_SRC.rglob("*.py")):
        source = _package(path)
        where = path.relative_to(_SRC).as_posix()
        for line, target in _imports(path):
            if _RANK[target] > _RANK[source]:
                upward.append(f"{where}:{line} imports himga.{target}")
    assert upward == []

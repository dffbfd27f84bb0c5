"""Moved: the loopback fake LLM server is :class:`himga.llm.FakeLLMServer`.

This module path, which earlier releases documented, still imports the same
objects (and warns once that it moved).
"""

from __future__ import annotations

import warnings

from himga.llm._fake_server import (
    FakeLLMServer,
    RecordedRequest,
    echo_responder,
    offline_responder,
    word_count,
)

__all__ = ["FakeLLMServer", "RecordedRequest", "echo_responder", "offline_responder", "word_count"]

warnings.warn(
    "himga.testing.llm_server moved to himga.llm: from himga.llm import FakeLLMServer",
    DeprecationWarning,
    stacklevel=2,
)

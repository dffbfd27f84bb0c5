"""The network guard in a child process: on ``PYTHONPATH`` (with the project root), every
Python process started below a test refuses non-loopback connections as the test does
(:mod:`tests.network_guard`), and appends each attempt, as it happens, to the file
``$HIMGA_TEST_NETWORK_LOG`` -- which the test reads, since the child may swallow the
error or be killed before it could say anything."""

from __future__ import annotations

import os

import pytest
from tests.network_guard import guard_network

_LOG = os.environ.get("HIMGA_TEST_NETWORK_LOG")


class _Logged(list[str]):
    def append(self, attempt: str) -> None:
        super().append(attempt)
        if _LOG:
            with open(_LOG, "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()}: {attempt}\n")


guard_network(pytest.MonkeyPatch(), _Logged())

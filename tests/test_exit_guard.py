"""``os._exit`` raises inside ``exit_raises`` -- in the process that entered it only."""

from __future__ import annotations

import os

import pytest

from himga._exit_guard import ProcessExitCalled, exit_called, exit_raises, hard_exit


def test_os_exit_raises_inside_and_exits_again_outside() -> None:
    real = os._exit
    with exit_raises(), pytest.raises(ProcessExitCalled) as caught:
        os._exit(0)
    assert caught.value.code == 0
    assert exit_called(caught.value) == "os._exit(0)"
    assert os._exit is real


def test_a_forked_child_still_exits() -> None:
    # multiprocessing's children end with os._exit: inside the guard they must still end.
    with exit_raises():
        child = os.fork()
        if child == 0:
            try:
                os._exit(7)
            finally:
                hard_exit(9)  # reached only if os._exit raised in the child
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 7

"""``python -m himga``: the same as the ``himga`` command."""

from himga._cli import entry_point

entry_point()

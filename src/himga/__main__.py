"""``python -m himga``: the same as the ``himga`` command."""

import sys

from himga._cli import main

sys.exit(main())

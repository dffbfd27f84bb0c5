"""Exit statuses more than one command returns, each defined once."""

from __future__ import annotations

__all__ = ["BROKEN_PIPE", "EXIT_INCOMPLETE", "INTERRUPTED"]

#: The command finished, but some of its work got no result: a memory, LLM or judge call
#: failed on some questions (``eval``), some answers got no verdict (``judge``,
#: ``judge-test``).
EXIT_INCOMPLETE = 3
#: What a shell reports for a process stopped by SIGINT.
INTERRUPTED = 130
#: A closed stdout (``himga check X | head``) is neither a pass (0) nor a failure (1):
#: 141 is what a shell reports for a process killed by SIGPIPE.
BROKEN_PIPE = 141

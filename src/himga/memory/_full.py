"""Placeholder: being written (issue 5)."""


class FullContextMemory:
    pass

"""Placeholder: being written (issue 5)."""


class KeywordMemory:
    pass

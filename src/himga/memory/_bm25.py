"""Placeholder: being written (issue 5)."""


class BM25Memory:
    pass

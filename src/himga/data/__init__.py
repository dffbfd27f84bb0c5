"""Benchmark data: the schema and the dataset loaders."""

from himga.data.schema import Category, Message, QAPair, Sample, Session

__all__ = ["Category", "Message", "QAPair", "Sample", "Session"]

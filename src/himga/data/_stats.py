"""Summary statistics of a dataset, as printed by ``himga datasets``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from himga.data.schema import Sample

__all__ = ["CHARS_PER_TOKEN", "DatasetStats", "dataset_stats"]

#: Approximate tokens are ``characters / CHARS_PER_TOKEN`` over message contents
#: (the usual rule of thumb for English with BPE tokenizers; no tokenizer needed).
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class DatasetStats:
    """Counts over a set of samples; ``questions_per_category`` is keyed by category value."""

    samples: int
    sessions: int
    turns: int
    questions: int
    questions_per_category: Mapping[str, int] = field(default_factory=dict)
    approx_tokens: int = 0


def dataset_stats(samples: Iterable[Sample]) -> DatasetStats:
    """Count samples, sessions, turns, questions (per category) and approximate tokens.

    Consumes ``samples`` once, keeping nothing, so it works on a stream.
    """
    n_samples = n_sessions = n_turns = chars = 0
    categories: Counter[str] = Counter()
    for sample in samples:
        n_samples += 1
        n_sessions += len(sample.sessions)
        for _, message in sample.iter_turns():
            n_turns += 1
            chars += len(message.content)
        categories.update(qa.category for qa in sample.qa_pairs)
    return DatasetStats(
        samples=n_samples,
        sessions=n_sessions,
        turns=n_turns,
        questions=sum(categories.values()),
        questions_per_category=dict(sorted(categories.items())),
        approx_tokens=chars // CHARS_PER_TOKEN,
    )

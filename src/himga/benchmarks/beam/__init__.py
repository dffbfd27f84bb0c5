"""BEAM ("Beyond a Million Tokens", Tavakoli et al.): its four tiers, loader and judge.

``beam-100k``, ``beam-500k``, ``beam-1m`` and ``beam-10m`` read the official
layout of mohammadtavakoli78/BEAM (a checkout, or one tier's ``chats/<tier>``
folder) and download it at a pinned commit. See ``docs/beam.md``.
"""

from himga.benchmarks.beam._benchmark import BeamBenchmark, tiers
from himga.benchmarks.beam._evidence import flatten_source_ids
from himga.benchmarks.beam._judge import BeamJudge, parse_equivalence, parse_rubric_verdict
from himga.benchmarks.beam._load import QUESTION_TYPES, history_file, iter_beam, strip_marker
from himga.benchmarks.beam._manifest import COMMIT, REPOSITORY, TIERS
from himga.benchmarks.beam._scoring import align, event_ordering_tau, kendall_tau_b, rubric_score

__all__ = [
    "COMMIT",
    "QUESTION_TYPES",
    "REPOSITORY",
    "TIERS",
    "BeamBenchmark",
    "BeamJudge",
    "align",
    "event_ordering_tau",
    "flatten_source_ids",
    "history_file",
    "iter_beam",
    "kendall_tau_b",
    "parse_equivalence",
    "parse_rubric_verdict",
    "rubric_score",
    "strip_marker",
    "tiers",
]

"""LoCoMo-10 (Maharana et al., ACL 2024) as a himga benchmark.

Its layouts and loader (:func:`iter_locomo`), categories and their official codes,
mem0's judge (:class:`LocomoJudge`) and the official QA score
(:func:`locomo_f1`, the ``f1`` metric of LoCoMo runs).
"""

from himga.benchmarks.locomo._benchmark import LOCOMO, SPEC, LoCoMo
from himga.benchmarks.locomo._categories import (
    ADVERSARIAL,
    CATEGORIES,
    MULTI_HOP,
    OPEN_DOMAIN,
    SINGLE_HOP,
    TEMPORAL,
    category_of_code,
    code_of,
)
from himga.benchmarks.locomo._evidence import normalise_evidence
from himga.benchmarks.locomo._judge import PROMPTS, LocomoJudge, parse_label
from himga.benchmarks.locomo._loader import IMAGE_FORMAT, find_locomo, iter_locomo
from himga.benchmarks.locomo._metrics import F1, locomo_f1

__all__ = [
    "ADVERSARIAL",
    "CATEGORIES",
    "F1",
    "IMAGE_FORMAT",
    "LOCOMO",
    "MULTI_HOP",
    "OPEN_DOMAIN",
    "PROMPTS",
    "SINGLE_HOP",
    "SPEC",
    "TEMPORAL",
    "LoCoMo",
    "LocomoJudge",
    "category_of_code",
    "code_of",
    "find_locomo",
    "iter_locomo",
    "locomo_f1",
    "normalise_evidence",
    "parse_label",
]

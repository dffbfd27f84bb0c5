"""Answer scorers that need no LLM: LoCoMo F1, BLEU-1 and exact match.

``locomo_f1`` reproduces the official LoCoMo scorer, ``task_eval/evaluation.py``
of snap-research/locomo (``normalize_answer``, ``f1_score``, ``f1`` and the
per-category dispatch of ``eval_question_answering``):

* normalisation: drop commas, lowercase, strip ASCII punctuation, replace the
  words a / an / the / and by a space, collapse whitespace;
* tokens are Porter-stemmed (NLTK's ``PorterStemmer()``); F1 is the multiset
  overlap F1 of the two token lists, 0 when nothing overlaps;
* category 1 (multi-hop) splits prediction and gold on commas and averages, over
  the gold parts, the best F1 of any prediction part;
* category 3 (open-domain) keeps the gold up to its first ``;``;
* category 5 (adversarial) scores 1 when the lowercased prediction contains
  ``"no information available"`` or ``"not mentioned"``, else 0;
* categories 2 and 4 use plain F1.

NLTK is an optional dependency (``himga[metrics]``), imported on first use.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import cache
from typing import Any

from himga._extras import require
from himga.data.schema import Category

__all__ = ["bleu1", "exact_match", "locomo_f1", "normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = frozenset(string.punctuation)
_ABSTENTION_MARKERS = ("no information available", "not mentioned")


def normalize_answer(text: str) -> str:
    """The official LoCoMo ``normalize_answer``: the normalisation F1 and exact match share."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@cache
def _stemmer() -> Any:
    stem = require("nltk.stem", extra="metrics", purpose="LoCoMo F1 (Porter stemming)")
    return stem.PorterStemmer()


def _stemmed_tokens(text: str) -> list[str]:
    stemmer = _stemmer()
    return [stemmer.stem(word) for word in normalize_answer(text).split()]


def token_f1(prediction: str, ground_truth: str) -> float:
    """The official LoCoMo ``f1_score``: stemmed multiset-overlap F1 of two answers."""
    predicted = _stemmed_tokens(prediction)
    gold = _stemmed_tokens(ground_truth)
    overlap = sum((Counter(predicted) & Counter(gold)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def _as_locomo_code(category: Category | int) -> int:
    if isinstance(category, Category):
        code = category.locomo_code
        if code is None:
            raise ValueError(f"locomo_f1 scores LoCoMo categories only, got {category.value!r}")
        return code
    Category.from_locomo_code(category)  # raises ValueError naming the unknown code
    return category


def locomo_f1(prediction: str, ground_truth: str, category: Category | int) -> float:
    """The official LoCoMo QA score of ``prediction`` against ``ground_truth``.

    ``category`` is a :class:`~himga.data.Category` or the official integer code
    (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial); any
    other value is a ``ValueError``.
    """
    code = _as_locomo_code(category)
    if code == 5:
        lowered = prediction.lower()
        return 1.0 if any(marker in lowered for marker in _ABSTENTION_MARKERS) else 0.0
    if code == 3:
        ground_truth = ground_truth.split(";")[0].strip()
    if code == 1:
        predictions = [part.strip() for part in prediction.split(",")]
        golds = [part.strip() for part in ground_truth.split(",")]
        best = [max(token_f1(p, gold) for p in predictions) for gold in golds]
        return sum(best) / len(best)
    return token_f1(prediction, ground_truth)


def exact_match(prediction: str, ground_truth: str) -> float:
    """The official LoCoMo ``exact_match_score``: 1.0 when both normalised answers
    have the same set of words, else 0.0."""
    same = set(normalize_answer(prediction).split()) == set(normalize_answer(ground_truth).split())
    return 1.0 if same else 0.0


@cache
def _bleu() -> tuple[Any, Any, Any]:
    purpose = "BLEU-1"
    tokenize = require("nltk.tokenize", extra="metrics", purpose=purpose)
    bleu = require("nltk.translate.bleu_score", extra="metrics", purpose=purpose)
    return tokenize.word_tokenize, bleu.sentence_bleu, bleu.SmoothingFunction().method1


def bleu1(prediction: str, ground_truth: str) -> float:
    """BLEU-1 as in the mem0 and A-Mem tables (``calculate_bleu_scores`` of their
    evaluation code): NLTK ``sentence_bleu`` with weights ``(1, 0, 0, 0)`` and
    ``SmoothingFunction().method1`` over the lowercased, word-tokenised answers;
    0.0 when either answer is empty.

    Tokenisation is NLTK's Treebank word tokenizer on the text as one line
    (``word_tokenize(..., preserve_line=True)``); mem0 first splits sentences
    with the Punkt model, which needs a separate data download and only changes
    how a full stop in the middle of a multi-sentence answer is split.
    """
    prediction, ground_truth = prediction.strip(), ground_truth.strip()
    if not prediction or not ground_truth:
        return 0.0
    word_tokenize, sentence_bleu, smoothing = _bleu()
    hypothesis = word_tokenize(prediction.lower(), preserve_line=True)
    reference = word_tokenize(ground_truth.lower(), preserve_line=True)
    score = sentence_bleu(
        [reference], hypothesis, weights=(1, 0, 0, 0), smoothing_function=smoothing
    )
    return float(score)

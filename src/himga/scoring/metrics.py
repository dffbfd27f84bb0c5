"""Answer scorers that need no LLM: token F1, BLEU-1 and exact match.

``normalize_answer`` and ``token_f1`` reproduce the official LoCoMo scorer,
``task_eval/evaluation.py`` of snap-research/locomo (``normalize_answer``,
``f1_score``): drop commas, lowercase, strip ASCII punctuation, replace the words
a / an / the / and by a space, collapse whitespace; tokens are Porter-stemmed
(NLTK's ``PorterStemmer()``); F1 is the multiset overlap F1 of the two token
lists, 0 when nothing overlaps. LoCoMo's per-category rules on top of it are
:func:`himga.benchmarks.locomo.locomo_f1`.

NLTK is an optional dependency (``himga[metrics]``), imported on first use.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import cache
from typing import Any

from himga._extras import require

__all__ = ["bleu1", "exact_match", "normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = frozenset(string.punctuation)


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

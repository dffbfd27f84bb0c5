"""The answer scorers against cases derived from the official definitions.

LoCoMo F1: ``task_eval/evaluation.py`` of snap-research/locomo. Each case below
names the rule of that code it exercises; expected values are worked out by
hand from the rule.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.benchmarks.locomo import locomo_f1
from himga.data.schema import Category
from himga.scoring.metrics import bleu1, exact_match, normalize_answer, token_f1

SINGLE_HOP, MULTI_HOP, TEMPORAL, OPEN_DOMAIN, ADVERSARIAL = 4, 1, 2, 3, 5


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("The Cat, and the Hat!", "cat hat"),  # commas, case, punctuation, a/an/the/and
        ("U.S.A.", "usa"),  # punctuation is deleted, not replaced by a space
        ("band anderson a", "band anderson"),  # articles only as whole words
        ("  many   spaces\there ", "many spaces here"),
        ("an apple and a pear", "apple pear"),
        ("café—naïve", "café—naïve"),  # only ASCII punctuation (string.punctuation) goes
    ],
)
def test_normalize_answer_follows_the_official_steps(raw: str, normalised: str) -> None:
    assert normalize_answer(raw) == normalised


@pytest.mark.parametrize(
    ("prediction", "gold", "category", "expected"),
    [
        # plain F1 after normalisation: identical bags score 1
        ("The cat, and the hat!", "cat hat", SINGLE_HOP, 1.0),
        # Porter stemming on both sides
        ("running dogs", "run dog", TEMPORAL, 1.0),
        # multiset overlap: x appears twice in the prediction, once in gold -> P 2/3, R 1
        ("x x y", "x y", SINGLE_HOP, 0.8),
        # no overlap, empty prediction: 0
        ("elephant", "giraffe", SINGLE_HOP, 0.0),
        ("", "giraffe", SINGLE_HOP, 0.0),
        ("the a an", "giraffe", SINGLE_HOP, 0.0),
        # category 2/4 do not split on commas: P 1, R 1/2
        ("London", "London, Berlin", SINGLE_HOP, 2 / 3),
        # category 1: gold parts London -> 1, Berlin -> 0; mean 0.5
        ("London", "London, Berlin", MULTI_HOP, 0.5),
        # category 1: best prediction part per gold part
        ("Berlin, London", "London, Berlin", MULTI_HOP, 1.0),
        ("painting, running, hiking", "hiking, painting", MULTI_HOP, 1.0),
        # category 3 cuts gold at the first ';'
        ("Sweden", "Sweden; her home country", OPEN_DOMAIN, 1.0),
        # ... other categories keep it: tokens sweden her home countri -> P 1, R 1/4
        ("Sweden", "Sweden; her home country", SINGLE_HOP, 0.4),
        # category 5: only the two markers count, case-insensitively, gold ignored
        ("Not mentioned in the conversation", "anything", ADVERSARIAL, 1.0),
        ("NO INFORMATION AVAILABLE.", "anything", ADVERSARIAL, 1.0),
        ("It was never mentioned", "It was never mentioned", ADVERSARIAL, 0.0),
        ("anything", "anything", ADVERSARIAL, 0.0),
    ],
)
def test_locomo_f1_derived_cases(
    prediction: str, gold: str, category: int, expected: float
) -> None:
    assert locomo_f1(prediction, gold, category) == pytest.approx(expected)
    assert locomo_f1(prediction, gold, Category.from_locomo_code(category)) == pytest.approx(
        expected
    )


def test_locomo_f1_rejects_categories_it_cannot_score() -> None:
    with pytest.raises(ValueError, match="6"):
        locomo_f1("a", "b", 6)
    with pytest.raises(ValueError, match="knowledge-update"):
        locomo_f1("a", "b", Category.KNOWLEDGE_UPDATE)


words = st.lists(st.sampled_from(["cat", "dogs", "ran", "the", "blue", "Paris", "x,"]), max_size=6)
texts = words.map(" ".join)


@given(texts, texts, st.sampled_from([1, 2, 3, 4, 5]))
def test_locomo_f1_is_a_score_and_enum_equals_code(pred: str, gold: str, code: int) -> None:
    score = locomo_f1(pred, gold, code)
    assert 0.0 <= score <= 1.0
    assert score == locomo_f1(pred, gold, Category.from_locomo_code(code))


@given(texts, texts)
def test_token_f1_is_symmetric(a: str, b: str) -> None:
    assert token_f1(a, b) == pytest.approx(token_f1(b, a))


@given(texts)
def test_token_f1_of_an_answer_with_itself(a: str) -> None:
    assert token_f1(a, a) == (1.0 if normalize_answer(a) else 0.0)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The Cat", "cat", 1.0),
        ("cat dog", "dog, cat.", 1.0),  # the official score compares word sets
        ("cat cat dog", "dog cat", 1.0),
        ("cats", "cat", 0.0),  # no stemming in exact match
    ],
)
def test_exact_match_is_the_official_word_set_equality(
    prediction: str, gold: str, expected: float
) -> None:
    assert exact_match(prediction, gold) == expected


def test_bleu1_values_follow_nltk_unigram_bleu() -> None:
    assert bleu1("the cat sat", "The cat sat") == pytest.approx(1.0)
    # unigram precision 1, brevity penalty exp(1 - 3/1)
    assert bleu1("cat", "the cat sat") == pytest.approx(math.exp(-2))
    # precision 1/2, no brevity penalty
    assert bleu1("cat dog", "cat sat") == pytest.approx(0.5)
    assert bleu1("", "cat") == 0.0
    assert bleu1("cat", "  ") == 0.0

"""Judge self-tests: answers of known rightness, made from a benchmark's gold, judged by
its real :class:`~himga.benchmarks.Judge` to measure how often the judge is fooled.

Five sets, one answer per chosen question each, built without a model (seeded, so the
same seed gives the same answers and, through the LLM cache, costs nothing again):

* ``vague`` (reject): topical but committing to nothing -- the question's own topic
  words in a sentence of the answer's kind ("Sometime around ...", "Something to do
  with ..."), leaving out every word of the gold (an answer that still holds them all,
  through the template's own words, is unavailable);
* ``specific-wrong`` (reject): another answer of the same kind (date, number, name or
  phrase) from the same conversation -- another question's gold, else a session date,
  a number said in a turn or a speaker's name -- neither holding every word of the
  gold nor held by it ("4" is no wrong answer to "4 hours");
* ``abstention`` (reject): "Not mentioned in the conversation." and the like, for a
  question whose answer the conversation holds;
* ``exact`` (accept): the gold answer itself, verbatim -- the control: a judge that
  refuses it refuses right answers, and one that rejects everything would otherwise
  pass every reject set (tested unless the judge gave partial credit, as BEAM's rubric
  judge does: it grades rubric items, which the gold's wording need not meet);
* ``padded-correct`` (accept): the gold followed by an irrelevant clause. Its
  acceptance rate is reported, not tested: a strict judge may fairly refuse extra
  detail, a fair one accepts it.

A question takes part when its gold is an answer to state: not adversarial (its right
answer is to abstain), not LongMemEval's single-session-preference nor BEAM's
instruction- and preference-following (their gold describes the reply wanted, "Response
should include ...", rather than stating an answer) and not BEAM's event ordering
(scored by Kendall tau of an order, not a verdict). An answer a generator cannot make
for a question (no other answer of its kind in the conversation) is counted as
``unavailable`` in its set.

A question's judge score is *accepted* when it is at least :data:`ACCEPTED_AT` (0.5):
1.0 / 0.0 for LoCoMo's and LongMemEval's binary judges; for BEAM's rubric judge (the
mean of 1 / 0.5 / 0 per rubric item) at least half the rubric's credit.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from himga.benchmarks._judge_prompts import OFFICIAL, get_judge_prompt
from himga.benchmarks._offline import covered
from himga.benchmarks._registry import get_benchmark
from himga.benchmarks.beam._load import EVENT_ORDERING, INSTRUCTION_FOLLOWING, PREFERENCE_FOLLOWING
from himga.benchmarks.longmemeval._categories import SINGLE_SESSION_PREFERENCE
from himga.data.schema import QAPair, Sample
from himga.eval._identity import llm_identity
from himga.eval._intervals import Proportion, wilson_interval
from himga.eval.judge import batch_judge, prompt_hashes
from himga.llm._protocol import LLMClient
from himga.memory._text import ENGLISH_MONTHS, ENGLISH_STOPWORDS
from himga.scoring._result import EvalResult

__all__ = [
    "ACCEPTED_AT",
    "DEFAULT_MAX_FALSE_ACCEPT",
    "DEFAULT_MAX_FALSE_REJECT",
    "DEFAULT_QUESTIONS",
    "SET_NAMES",
    "TESTED_ACCEPT",
    "JudgeTestItem",
    "JudgeTestResult",
    "SetResult",
    "answer_kind",
    "judge_test_items",
    "run_judge_test",
]

#: A judge score at or above this is an accepted answer (module docstring).
ACCEPTED_AT: Final = 0.5
#: The largest share of a wrong set a judge may accept and pass. One wrong answer in
#: ten: the gpt-4o-mini "be generous" judge measured by dial481/locomo-audit accepts
#: 10.6% of specific wrong answers and 62.8% of vague ones, so the default fails that
#: judge on both, while leaving a strict judge room for a few honest misreadings.
DEFAULT_MAX_FALSE_ACCEPT: Final = 0.10
#: The share of the gold answers themselves (``exact``) a judge may reject and still pass.
DEFAULT_MAX_FALSE_REJECT: Final = 0.10
#: Questions drawn per set when ``n`` is not given: 200 judge calls in all.
DEFAULT_QUESTIONS: Final = 50

Expectation = Literal["accept", "reject"]
#: Each set's name and whether a fair judge accepts its answers, in report order.
SETS: Final[Mapping[str, Expectation]] = {
    "vague": "reject",
    "specific-wrong": "reject",
    "abstention": "reject",
    "exact": "accept",
    "padded-correct": "accept",
}
#: The accept set the pass rule tests (``padded-correct`` is reported, not tested).
TESTED_ACCEPT: Final = "exact"
SET_NAMES: Final = tuple(SETS)

_NOT_ANSWERS: Final = frozenset(
    {SINGLE_SESSION_PREFERENCE, INSTRUCTION_FOLLOWING, PREFERENCE_FOLLOWING, EVENT_ORDERING}
)
_WORD = re.compile(r"[A-Za-z0-9']+")
_DATE = re.compile(
    r"\b(?:(?:19|20)\d\d|"
    + "|".join(m for month in ENGLISH_MONTHS for m in (month, month[:3]))
    + r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow"
    r"|week|month|year)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\b(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|twenty|thirty|hundred|thousand|once|twice)\b",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\b\d+(?:[.,]\d+)?\b")
# Question words that say nothing of its topic, besides the stopwords.
_NOT_TOPIC = ENGLISH_STOPWORDS | {"would", "could", "many", "much", "long", "ever", "likely"}
_VAGUE: Final[Mapping[str, tuple[str, ...]]] = {
    "date": (
        "Sometime around then; it came up when they talked about {topic}.",
        "It was a while back, around the time of the {topic} conversation.",
    ),
    "number": (
        "A few; it came up when they talked about {topic}.",
        "Several, going by what they said about {topic}.",
    ),
    "name": (
        "It has to do with {topic}; the name came up when they talked about it.",
        "The one connected with {topic}, as they discussed it.",
    ),
    "phrase": (
        "Something to do with {topic}, as they discussed it.",
        "It relates to {topic}; they talked about it in the conversation.",
    ),
}
_ABSTAIN: Final = (
    "Not mentioned in the conversation.",
    "I don't know.",
    "The conversation does not say.",
)
_PADDING: Final = (
    "{gold}. They also chatted about the weather and weekend plans that day.",
    "{gold}, mentioned in passing while they caught up about work and family.",
    "{gold}; the same chat also covered a new recipe and a favourite TV show.",
)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def answer_kind(text: str) -> str:
    """``"date"``, ``"number"``, ``"name"`` (every word capitalised, at most four) or
    ``"phrase"``: what kind of answer ``text`` is, for :func:`judge_test_items`."""
    if _DATE.search(text):
        return "date"
    if _NUMBER.search(text):
        return "number"
    words = _WORD.findall(text)
    if 0 < len(words) <= 4 and all(w[0].isupper() for w in words):
        return "name"
    return "phrase"


def _holds_gold(gold: str, answer: str) -> bool:
    """Whether ``answer`` gives the gold away: it holds every word of the gold."""
    return covered(gold, answer) == 1.0


def _vague(sample: Sample, qa: QAPair, rng: random.Random) -> str | None:
    banned = set(_words(qa.answer))
    topic = [w for w in _words(qa.question) if w not in _NOT_TOPIC and w not in banned]
    # Order-preserving de-duplication: the question's own topic words, at most three.
    chosen = list(dict.fromkeys(topic))[:3]
    if not chosen:
        return None
    return rng.choice(_VAGUE[answer_kind(qa.answer)]).format(topic=" ".join(chosen))


def _specific_wrong(sample: Sample, qa: QAPair, rng: random.Random) -> str | None:
    kind = answer_kind(qa.answer)
    others = [
        other.answer
        for other in sample.qa_pairs
        if other.question_id != qa.question_id
        and not other.adversarial
        and answer_kind(other.answer) == kind
    ]
    turns: list[str] = []
    if kind == "date":
        turns = [s.date_str for s in sample.sessions if s.date_str]
    elif kind == "number":
        turns = [m for _, message in sample.iter_turns() for m in _DIGITS.findall(message.content)]
    elif kind == "name":
        turns = list(sample.speakers)
    for pool in (others, turns):
        # Sorted and de-duplicated first: the draw depends on the seed, not on set order.
        usable = sorted(
            {
                c.strip()
                for c in pool
                # Neither holds the other: "4" is no wrong answer to "4 hours".
                if _words(c) and not _holds_gold(qa.answer, c) and not _holds_gold(c, qa.answer)
            }
        )
        if usable:
            return rng.choice(usable)
    return None


def _abstention(sample: Sample, qa: QAPair, rng: random.Random) -> str | None:
    return rng.choice(_ABSTAIN)


def _exact(sample: Sample, qa: QAPair, rng: random.Random) -> str | None:
    return qa.answer.strip()


def _padded(sample: Sample, qa: QAPair, rng: random.Random) -> str | None:
    return rng.choice(_PADDING).format(gold=qa.answer.strip().rstrip("."))


_GENERATORS: Final[Mapping[str, Callable[[Sample, QAPair, random.Random], str | None]]] = {
    "vague": _vague,
    "specific-wrong": _specific_wrong,
    "abstention": _abstention,
    "exact": _exact,
    "padded-correct": _padded,
}


@dataclass(frozen=True, slots=True)
class JudgeTestItem:
    """One answer of a self-test set (``answer`` is ``None``: no such answer could be
    made for this question -- it is counted as unavailable)."""

    set: str
    sample: Sample
    qa: QAPair
    answer: str | None

    def result(self, dataset: str) -> EvalResult:
        """The item as the judge reads a run's result (no context, no evidence)."""
        return EvalResult(
            sample_id=self.sample.sample_id,
            question_id=self.qa.question_id,
            dataset=dataset,
            category=self.qa.category,
            question=self.qa.question,
            answer=self.qa.answer,
            adversarial=self.qa.adversarial,
            evidence_turns=(),
            evidence_texts=(),
            context="",
            ranked_turn_ids=None,
            retrieval_latency_s=0.0,
            prediction=self.answer,
            gold=self.qa.gold,
        )


def _eligible(qa: QAPair) -> bool:
    return not qa.adversarial and qa.category not in _NOT_ANSWERS and bool(_words(qa.answer))


def judge_test_items(
    samples: Iterable[Sample], *, n: int, seed: int
) -> tuple[list[JudgeTestItem], int]:
    """The items of every set for ``n`` questions drawn with ``seed`` from the eligible
    ones (all of them when fewer), and how many were eligible.

    Deterministic: the draw and every answer depend only on ``seed``, the set and the
    question. A generated wrong answer never holds every word of the gold; an answer
    that would (the abstention phrase being the gold itself) is made unavailable.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    pool = [(sample, qa) for sample in samples for qa in sample.qa_pairs if _eligible(qa)]
    chosen = random.Random(seed).sample(pool, min(n, len(pool)))
    items: list[JudgeTestItem] = []
    for name, generate in _GENERATORS.items():
        for sample, qa in chosen:
            rng = random.Random(f"{seed}/{name}/{sample.sample_id}/{qa.question_id}")
            answer = generate(sample, qa, rng)
            if answer is not None and SETS[name] == "reject" and _holds_gold(qa.answer, answer):
                answer = None
            items.append(JudgeTestItem(name, sample, qa, answer))
    return items, len(pool)


@dataclass(frozen=True, slots=True)
class SetResult:
    """One set's outcome: ``items`` drawn, ``unavailable`` of them without an answer,
    ``errors`` without a verdict (a failed call or an unparseable reply; excluded from
    the rate), and ``accepted`` of the judged ones with their Wilson 95% interval;
    ``partial``: some verdict gave partial credit (BEAM's rubric)."""

    name: str
    expects: Expectation
    items: int
    unavailable: int
    errors: int
    accepted: Proportion
    mean_score: float | None
    partial: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "name": self.name,
            "expects": self.expects,
            "items": self.items,
            "unavailable": self.unavailable,
            "errors": self.errors,
            "judged": self.accepted.n,
            "accepted": self.accepted.successes,
            "rate": self.accepted.rate,
            "ci95": [self.accepted.low, self.accepted.high],
            "mean_score": self.mean_score,
            "partial": self.partial,
        }


@dataclass(frozen=True, slots=True)
class JudgeTestResult:
    """A judge's self-test on a dataset: its identity (as a run manifest's ``judge``:
    provider, model, temperature, weights where local, ``prompt_hashes``), the draw and
    the outcome per set."""

    dataset: str
    seed: int
    questions: int
    eligible: int
    max_false_accept: float
    judge: Mapping[str, Any]
    sets: tuple[SetResult, ...]
    max_false_reject: float = DEFAULT_MAX_FALSE_REJECT

    def failures(self) -> list[str]:
        """Why the judge fails, one line per reject set over the threshold or without a
        verdict, and one when it rejects more of the gold answers themselves (``exact``)
        than ``max_false_reject``; empty when it passes."""
        found = []
        for s in self.sets:
            if s.name == TESTED_ACCEPT:
                # A rubric judge (partial credit) grades rubric items, not the gold's
                # wording: the gold verbatim need not earn half of it, so it is reported.
                rate = s.accepted.rate
                if s.partial:
                    continue
                if rate is None:
                    found.append(f"{s.name}: no answer was judged")
                elif 1 - rate > self.max_false_reject:
                    rejected = s.accepted.n - s.accepted.successes
                    found.append(
                        f"{s.name}: rejected {rejected} of {s.accepted.n} gold answers "
                        f"({1 - rate:.1%} > {self.max_false_reject:.1%})"
                    )
                continue
            if s.expects != "reject":
                continue
            rate = s.accepted.rate
            if rate is None:
                found.append(f"{s.name}: no answer was judged")
            elif rate > self.max_false_accept:
                found.append(
                    f"{s.name}: accepted {s.accepted.successes} of {s.accepted.n} wrong answers "
                    f"({rate:.1%} > {self.max_false_accept:.1%})"
                )
        return found

    @property
    def passed(self) -> bool:
        """No reject set accepted more than ``max_false_accept`` of its judged answers, and
        the gold itself was rejected no more than ``max_false_reject``."""
        return not self.failures()

    @property
    def errors(self) -> int:
        """Answers without a verdict, over every set."""
        return sum(s.errors for s in self.sets)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for ``--json`` and a run's manifest."""
        return {
            "dataset": self.dataset,
            "seed": self.seed,
            "questions": self.questions,
            "eligible": self.eligible,
            "accepted_at": ACCEPTED_AT,
            "max_false_accept": self.max_false_accept,
            "max_false_reject": self.max_false_reject,
            "passed": self.passed,
            "judge": dict(self.judge),
            "sets": [s.to_dict() for s in self.sets],
        }


def _set_result(name: str, items: Sequence[tuple[JudgeTestItem, float | None]]) -> SetResult:
    scored = [score for _, score in items if score is not None and not math.isnan(score)]
    unavailable = sum(1 for item, _ in items if item.answer is None)
    return SetResult(
        name=name,
        expects=SETS[name],
        items=len(items),
        unavailable=unavailable,
        errors=len(items) - unavailable - len(scored),
        accepted=wilson_interval(sum(1 for s in scored if s >= ACCEPTED_AT), len(scored)),
        mean_score=sum(scored) / len(scored) if scored else None,
        partial=any(score not in (0.0, 1.0) for score in scored),
    )


def run_judge_test(
    samples: Iterable[Sample],
    *,
    dataset: str,
    llm: LLMClient,
    n: int = DEFAULT_QUESTIONS,
    seed: int = 0,
    max_false_accept: float = DEFAULT_MAX_FALSE_ACCEPT,
    show_progress: bool = True,
    prompt: str = OFFICIAL,
    max_false_reject: float = DEFAULT_MAX_FALSE_REJECT,
) -> JudgeTestResult:
    """Judge every set's answers for ``n`` questions of ``samples`` (of ``dataset``) with
    ``llm`` through the dataset's judge prompt ``prompt`` (default: its official judge;
    a ``ValueError`` for a prompt it does not have) (:func:`~himga.eval.batch_judge`: its
    requests, parse and score), and measure each set's acceptance.

    Pass an ``llm`` built with a cache (``get_client(..., cache=PATH)``) and a rerun asks
    the model nothing. A failed call or an unparseable verdict is that answer's error,
    never a verdict.
    """
    for name, bound in (
        ("max_false_accept", max_false_accept),
        ("max_false_reject", max_false_reject),
    ):
        if not 0.0 <= bound <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {bound}")
    if prompt == OFFICIAL and get_benchmark(dataset).judge is None:
        raise ValueError(f"dataset {dataset!r} has no judge to test")
    judge = get_judge_prompt(dataset, prompt).judge
    items, eligible = judge_test_items(samples, n=n, seed=seed)
    if not eligible:
        raise ValueError(f"{dataset}: no question has a gold answer to test a judge with")
    answered = [item for item in items if item.answer is not None]
    scores = batch_judge(
        [item.result(dataset) for item in answered],
        llm=llm,
        show_progress=show_progress,
        prompt=prompt,
    )
    score_of = {id(item): score for item, score in zip(answered, scores, strict=True)}
    sets = tuple(
        _set_result(name, [(i, score_of.get(id(i))) for i in items if i.set == name])
        for name in SET_NAMES
    )
    return JudgeTestResult(
        dataset=dataset,
        seed=seed,
        questions=len(items) // len(SET_NAMES),
        eligible=eligible,
        max_false_accept=max_false_accept,
        max_false_reject=max_false_reject,
        judge={
            **llm_identity(llm),
            "prompt": prompt,
            "prompt_hashes": prompt_hashes(judge.prompts),
        },
        sets=sets,
    )

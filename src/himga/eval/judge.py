"""LLM-as-judge scoring of evaluation results.

* LoCoMo: the binary CORRECT / WRONG judge of mem0's evaluation
  (``evaluation/metrics/llm_judge.py``, ``ACCURACY_PROMPT``, verbatim). mem0
  skips the adversarial category; here adversarial (unanswerable) questions are
  judged with LongMemEval's abstention prompt, so the with-adversarial aggregate
  has a judge score too.
* LongMemEval: the official type-specific yes / no prompts of
  ``src/evaluation/evaluate_qa.py`` (``get_anscheck_prompt``) of
  xiaowu0162/LongMemEval, verbatim: default, temporal-reasoning (off-by-one
  tolerant), knowledge-update, single-session-preference (rubric) and
  abstention (``_abs`` questions).

Verdicts are parsed strictly: a reply that does not name exactly one verdict is
an error (``NaN`` score with the reason in :attr:`JudgeScores.errors`), never a
silent 0. So is a failed call and a result without a prediction.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Mapping, MutableMapping, Sequence

from tqdm.auto import tqdm

from himga._errors import HimgaError
from himga.data.schema import Category
from himga.eval._result import EvalResult
from himga.llm._protocol import LLMClient

__all__ = [
    "JUDGE_PROMPTS",
    "JudgeScores",
    "UnjudgeableError",
    "abatch_judge",
    "batch_judge",
    "parse_verdict",
]

_LOCOMO = """
Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:
    (1) a question (posed by one user to another user), 
    (2) a ’gold’ (ground truth) answer, 
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. 

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. 
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""  # noqa: E501, W291  (verbatim: long lines and trailing spaces included)

_LME_HEAD = (
    "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes if the response contains the correct answer. Otherwise, answer no. "
)
_LME_STEPS = (
    "If the response is equivalent to the correct answer or contains all the intermediate "
    "steps to get the correct answer, you should also answer yes. If the response only "
    "contains a subset of the information required by the answer, answer no. "
)
_LME_TAIL = (
    "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct? Answer yes or no only."
)
_LME_DEFAULT = _LME_HEAD + _LME_STEPS + _LME_TAIL
_LME_TEMPORAL = (
    _LME_HEAD
    + _LME_STEPS
    + "In addition, do not penalize off-by-one errors for the number of days. If the question "
    "asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
    "(e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    + _LME_TAIL
)
_LME_KNOWLEDGE_UPDATE = (
    _LME_HEAD
    + "If the response contains some previous information along with an updated answer, the "
    "response should be considered as correct as long as the updated answer is the required "
    "answer." + _LME_TAIL
)
_LME_PREFERENCE = (
    "I will give you a question, a rubric for desired personalized response, and a response "
    "from a model. Please answer yes if the response satisfies the desired response. "
    "Otherwise, answer no. The model does not need to reflect all the points in the rubric. "
    "The response is correct as long as it recalls and utilizes the user's personal "
    "information correctly.\n\nQuestion: {question}\n\nRubric: {answer}\n\nModel Response: "
    "{response}\n\nIs the model response correct? Answer yes or no only."
)
_LME_ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. "
    "Please answer yes if the model correctly identifies the question as unanswerable. The "
    "model could say that the information is incomplete, or some other information is given "
    "but the asked information is not.\n\nQuestion: {question}\n\nExplanation: {answer}\n\n"
    "Model Response: {response}\n\nDoes the model correctly identify the question as "
    "unanswerable? Answer yes or no only."
)
# LoCoMo's adversarial gold is a distractor, not an explanation: the abstention
# prompt gets this fixed explanation instead.
_LOCOMO_ADVERSARIAL_EXPLANATION = "The conversations do not contain this information."

JUDGE_PROMPTS: Mapping[str, str] = {
    "locomo": _LOCOMO,
    "longmemeval-default": _LME_DEFAULT,
    "longmemeval-temporal-reasoning": _LME_TEMPORAL,
    "longmemeval-knowledge-update": _LME_KNOWLEDGE_UPDATE,
    "longmemeval-single-session-preference": _LME_PREFERENCE,
    "longmemeval-abstention": _LME_ABSTENTION,
}

# max_tokens: mem0 lets the judge explain in one sentence; LongMemEval's
# official call allows 10 tokens for "yes" / "no".
_MAX_TOKENS = {"locomo": 256}
_YES_NO_MAX_TOKENS = 10

_LME_TYPED = {
    Category.TEMPORAL_REASONING: "longmemeval-temporal-reasoning",
    Category.KNOWLEDGE_UPDATE: "longmemeval-knowledge-update",
    Category.SINGLE_SESSION_PREFERENCE: "longmemeval-single-session-preference",
}


class UnjudgeableError(HimgaError, ValueError):
    """The judge's reply names no verdict, or more than one."""


class JudgeScores(list[float]):
    """Judge scores aligned with the judged results: 1.0 correct, 0.0 wrong,
    ``NaN`` not judged (the reason is in :attr:`errors`, by index).

    Also records how the scores were made: ``provider``, ``model``,
    ``temperature`` (``None`` when the client does not expose it) and the
    SHA-256 of every judge prompt used (:attr:`prompt_hashes`, by prompt name).
    """

    def __init__(
        self,
        scores: Sequence[float],
        *,
        provider: str,
        model: str,
        temperature: float | None,
        prompt_hashes: Mapping[str, str],
        errors: Mapping[int, str],
    ) -> None:
        super().__init__(scores)
        self.provider = provider
        self.model = model
        self.temperature = temperature
        self.prompt_hashes = dict(prompt_hashes)
        self.errors = dict(errors)

    def describe(self) -> dict[str, object]:
        """The judge configuration, JSON-ready, for run manifests."""
        return {
            "provider": self.provider,
            "model": self.model,
            "temperature": self.temperature,
            "prompt_hashes": self.prompt_hashes,
            "errors": len(self.errors),
        }


def _prompt(result: EvalResult, prediction: str) -> tuple[str, str]:
    """The prompt name and text judging ``prediction`` for ``result``.

    Chosen by category, whatever the dataset is called: LoCoMo's categories get
    mem0's judge (its adversarial one the abstention prompt), all others
    LongMemEval's.
    """
    if result.category is Category.ADVERSARIAL:
        name, answer = "longmemeval-abstention", _LOCOMO_ADVERSARIAL_EXPLANATION
    elif result.category.locomo_code is not None:
        text = _LOCOMO.format(
            question=result.question, gold_answer=result.answer, generated_answer=prediction
        )
        return "locomo", text
    elif result.adversarial:
        name, answer = "longmemeval-abstention", result.answer
    else:
        name, answer = _LME_TYPED.get(result.category, "longmemeval-default"), result.answer
    return name, JUDGE_PROMPTS[name].format(
        question=result.question, answer=answer, response=prediction
    )


_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_verdict(prompt_name: str, reply: str) -> float:
    """1.0 / 0.0 for the verdict in ``reply``; :class:`UnjudgeableError` when there is none.

    LoCoMo: the ``"label"`` of a JSON object if there is one, else the single
    upper-case CORRECT / WRONG in the text. LongMemEval: the single yes / no word
    (the official script takes any reply containing "yes" as yes; a reply with
    both or neither is an error here).
    """
    if prompt_name == "locomo":
        for match in _JSON_OBJECT.finditer(reply):
            try:
                label = json.loads(match.group())
            except json.JSONDecodeError:
                continue
            if isinstance(label, dict) and isinstance(label.get("label"), str):
                verdict = label["label"].strip().upper()
                if verdict in ("CORRECT", "WRONG"):
                    return 1.0 if verdict == "CORRECT" else 0.0
        found = {match.upper() for match in _LABEL.findall(reply)}
        positive = "CORRECT"
    else:
        found = {match.lower() for match in _YES_NO.findall(reply)}
        positive = "yes"
    if len(found) != 1:
        raise UnjudgeableError(f"no single verdict in judge reply {reply[:200]!r}")
    return 1.0 if found == {positive} else 0.0


def _cache_key(llm: LLMClient, prompt: str) -> str:
    material = json.dumps([llm.provider, llm.model, prompt])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


async def abatch_judge(
    results: Sequence[EvalResult],
    *,
    llm: LLMClient,
    cache: MutableMapping[str, float] | None = None,
    show_progress: bool = True,
    max_concurrency: int | None = None,
) -> JudgeScores:
    """The coroutine behind :func:`batch_judge`, for callers already inside an event loop."""
    cache = {} if cache is None else cache
    scores = [math.nan] * len(results)
    errors: dict[int, str] = {}
    used: dict[str, str] = {}
    by_key: dict[str, list[int]] = {}
    prompts: dict[str, tuple[str, str]] = {}
    for index, result in enumerate(results):
        if result.prediction is None:
            errors[index] = f"not judged: no prediction ({result.error or 'run without an LLM'})"
            continue
        name, text = _prompt(result, result.prediction)
        used[name] = hashlib.sha256(JUDGE_PROMPTS[name].encode("utf-8")).hexdigest()
        key = _cache_key(llm, text)
        by_key.setdefault(key, []).append(index)
        prompts[key] = (name, text)

    limit = llm.max_concurrency if max_concurrency is None else max_concurrency
    if limit < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {limit}")
    slots = asyncio.Semaphore(limit)
    progress = tqdm(total=len(by_key), disable=not show_progress, unit="q", desc="judge")

    async def judge(key: str) -> None:
        name, text = prompts[key]
        try:
            if key not in cache:
                async with slots:
                    completion = await llm.achat(
                        [{"role": "user", "content": text}],
                        max_tokens=_MAX_TOKENS.get(name, _YES_NO_MAX_TOKENS),
                    )
                cache[key] = parse_verdict(name, completion.text)
            for index in by_key[key]:
                scores[index] = cache[key]
        except Exception as exc:  # a failed call or an unparseable verdict: an error
            for index in by_key[key]:
                errors[index] = f"{type(exc).__name__}: {exc}"
        finally:
            progress.update(1)

    try:
        await asyncio.gather(*(judge(key) for key in by_key))
    finally:
        progress.close()
    temperature = getattr(llm, "temperature", None)
    return JudgeScores(
        scores,
        provider=llm.provider,
        model=llm.model,
        temperature=temperature if isinstance(temperature, (int, float)) else None,
        prompt_hashes=used,
        errors=errors,
    )


def batch_judge(
    results: Sequence[EvalResult],
    *,
    llm: LLMClient,
    cache: MutableMapping[str, float] | None = None,
    show_progress: bool = True,
    max_concurrency: int | None = None,
) -> JudgeScores:
    """Judge every result's prediction with ``llm``; scores aligned with ``results``.

    The prompt follows each result's dataset and category (module docstring).
    Calls run concurrently, at most ``max_concurrency`` (default: the client's)
    in flight. Identical judgements (same provider, model and prompt -- that is
    question, gold answer and prediction) are asked once; pass ``cache`` (any
    mutable mapping) to also reuse verdicts across calls.
    """
    return asyncio.run(
        abatch_judge(
            results,
            llm=llm,
            cache=cache,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
        )
    )

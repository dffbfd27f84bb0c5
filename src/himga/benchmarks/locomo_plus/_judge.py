"""The LoCoMo-Plus judge: upstream's LLM-as-judge, its templates verbatim.

``PROMPT_TEMPLATES`` of ``evaluation_framework/task_eval/prompt.py`` and the
scoring of ``task_eval/llm_as_judge.py`` (xjtuleeyf/Locomo-Plus at 059f4e3):
one template per upstream category -- ``Cognitive`` for LoCoMo-Plus items (no
gold answer: does the reply reflect the cue?), ``multi-hop``, ``temporal``,
``common-sense``, ``single-hop`` and ``adversarial`` for LoCoMo's questions --
filled with ``gold`` (the answer), ``pred`` (the prediction) and ``evidence``
(``QAPair.gold["evidence"]``: the cue, or the evidence turns as
``"<speaker>：<text>"`` lines), sent as one user message with 512 tokens
(upstream's judge default). A label scores correct 1, partial 0.5, wrong 0.

One difference, on purpose: upstream reads a reply without a JSON label by
looking for the words "correct", "wrong", "partial" in it (so "incorrect" counts
as correct) and scores any other reply 0; here such a reply raises
:class:`~himga.benchmarks.UnjudgeableError`, so the run records it instead of a
silent score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from himga.benchmarks._offline import abstains, covered, format_fields
from himga.benchmarks._protocol import JSONValue, JudgeRequest, UnjudgeableError
from himga.scoring._result import EvalResult

# Upstream's PROMPT_TEMPLATES, assembled here from their shared parts (the filled text is
# verbatim, long lines included); its "default" is left out: every category has its own
# template.
_FACT_SECTIONS = (
    "Reference Answer:\n{gold}\n\nModel Prediction:\n{pred}\n\nRelevant Evidence:\n{evidence}"
)
_THREE_LABELS = '"correct"|"partial"|"wrong"'
_TWO_LABELS = '"correct"|"wrong"'


def _template(
    task: str, labels: Sequence[str], sections: str, choices: str, reason: str = "short explanation"
) -> str:
    """One upstream template: the task, its labels, the filled sections, the JSON it asks for."""
    return (
        f"\n{task}\n\nLabels:\n" + "\n".join(labels) + f"\n\n{sections}\n\n"
        "Return your judgment strictly in JSON format:\n"
        f'{{{{"label": {choices}, "reason": "<{reason}>"}}}}\n'
    )


_TEMPLATES = {
    "multi-hop": _template(
        "You are a Fact-Checking Judge.\n"
        "Your task: Compare the model's prediction with the reference answer (multi-hop fact QA).",
        (
            '- "correct": The answer matches the reference entities (names, places, times) exactly.',  # noqa: E501
            '- "partial": The answer misses some details or contains minor inaccuracies but gets the main entity right.',  # noqa: E501
            '- "wrong": The answer is factually incorrect or hallucinates details not in the reference.',  # noqa: E501
        ),
        _FACT_SECTIONS,
        _THREE_LABELS,
    ),
    "single-hop": _template(
        "You are a Fact-Checking Judge.\n"
        "Your task: Compare the model's prediction with the reference answer (single-hop fact QA).",
        (
            '- "correct": The answer matches the reference entities exactly.',
            '- "partial": The answer misses some details but gets the main entity right.',
            '- "wrong": The answer is factually incorrect or hallucinates details not in the reference.',  # noqa: E501
        ),
        _FACT_SECTIONS,
        _THREE_LABELS,
    ),
    "temporal": _template(
        "You are a Temporal Logic Judge.\n"
        "Your task: Check the calculation, duration, or sequence of events.",
        (
            '- "correct": The calculated time, duration, or date matches the reference exactly (semantic equivalents are allowed).',  # noqa: E501
            '- "wrong": The calculation is incorrect, the sequence is reversed, or the specific time is wrong.',  # noqa: E501
        ),
        _FACT_SECTIONS,
        _TWO_LABELS,
    ),
    "common-sense": _template(
        "You are a Knowledge Logic Judge.\n"
        "Your task: Assess if the prediction applies correct commonsense/world knowledge consistent with the reference.",  # noqa: E501
        (
            '- "correct": The logic and inference are sound and match the reference conclusion.',
            '- "partial": The reasoning is mostly correct but the final conclusion is vague or slightly off.',  # noqa: E501
            '- "wrong": The reasoning contradicts commonsense or the reference.',
        ),
        _FACT_SECTIONS,
        _THREE_LABELS,
    ),
    "adversarial": _template(
        "You are a Skeptical Judge evaluating robustness.\n"
        "The question is inherently misleading (e.g., asks about something not in the conversation).\n"  # noqa: E501
        'Your task: Judge whether the model\'s answer conveys that "this was not mentioned in the conversation" (or equivalent refusal).',  # noqa: E501
        (
            '- "correct": The prediction clearly conveys that the information was not mentioned / cannot be answered from the conversation. Score it.',  # noqa: E501
            '- "wrong": The prediction does NOT convey that meaning—e.g., it gives a concrete answer or does not refuse. Do not score.',  # noqa: E501
        ),
        "\nModel Prediction:\n{pred}",
        _TWO_LABELS,
    ),
    "Cognitive": _template(
        "You are a Memory Awareness Judge.\n"
        "Your task: Judge whether the Model Prediction considers or is linked to the Evidence. If there is a clear connection, the answer is correct (score 1); if not, it is wrong (no score).",  # noqa: E501
        (
            '- "correct": The prediction explicitly or implicitly reflects/uses the evidence (memory or constraint). Give 1 point.',  # noqa: E501
            '- "wrong": The prediction does not show such a link to the evidence. No point.',
        ),
        "Memory/Evidence:\n{evidence}\n\nModel Prediction:\n{pred}",
        _TWO_LABELS,
        "Does the prediction relate to the evidence?",
    ),
}

#: Every template by upstream category name (its hash goes into the run identity).
PROMPTS: Mapping[str, str] = MappingProxyType(_TEMPLATES)

#: Upstream's scores per label (``LABEL_TO_SCORE`` of ``llm_as_judge.py``).
LABEL_SCORES: Mapping[str, float] = MappingProxyType({"correct": 1.0, "partial": 0.5, "wrong": 0.0})

#: Upstream's judge ``max_tokens`` (``--max-tokens`` default of ``llm_as_judge.py``).
MAX_TOKENS = 512

_LABEL = re.compile(r'["\']label["\']\s*:\s*["\']([^"\']+)["\']')
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")

#: The prefix of this judge's template names (names are global across benchmarks).
PREFIX = "locomo-plus-"


class LocomoPlusJudge:
    """Upstream's LLM-as-judge (see the module documentation), or the same judging with
    other ``templates`` (one per upstream category, the same slots and JSON reply) under
    template names starting ``prefix`` (names are global: other texts, another prefix).

    Reads ``result.gold["upstream_category"]`` (which template) and
    ``result.gold["evidence"]``; one request per result; parses to the label
    (``"correct"``, ``"partial"``, ``"wrong"``); scores it 1 / 0.5 / 0.
    """

    def __init__(
        self,
        templates: Mapping[str, str] = PROMPTS,
        prefix: str = PREFIX,
        scores: Mapping[str, float] = LABEL_SCORES,
    ) -> None:
        self._templates = MappingProxyType(dict(templates))
        self._prefix = prefix
        self._scores = MappingProxyType(dict(scores))
        self.prompts: Mapping[str, str] = MappingProxyType(
            {prefix + k: v for k, v in templates.items()}
        )

    def __repr__(self) -> str:
        return f"LocomoPlusJudge(prefix={self._prefix!r})"

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        """The filled template of the result's upstream category."""
        category = result.gold["upstream_category"]
        text = self._templates[category].format(
            gold=result.answer, pred=result.prediction or "", evidence=result.gold["evidence"]
        )
        return (JudgeRequest(prompt=self._prefix + category, text=text, max_tokens=MAX_TOKENS),)

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        """The one label of ``reply``: its JSON object's ``"label"``, else the one
        ``"label": "..."`` pair in it; :class:`UnjudgeableError` if none or several."""
        del request  # every template asks for the same JSON reply
        labels: set[str] = set()
        try:
            decoded = json.loads(_FENCE.sub("", reply.strip()))
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("label"), str):
            labels.add(decoded["label"])
        else:
            labels.update(_LABEL.findall(reply))
        normalised = {label.strip().lower() for label in labels}
        if len(normalised) != 1 or not normalised <= LABEL_SCORES.keys():
            raise UnjudgeableError(
                f"expected one label of {sorted(LABEL_SCORES)} in a JSON reply, got {reply[:200]!r}"
            )
        return normalised.pop()

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        """The label's score: upstream's correct 1.0, partial 0.5, wrong 0.0 unless
        ``scores`` says otherwise."""
        del result
        (label,) = parsed
        return self._scores[str(label)]

    def offline_reply(self, text: str) -> str | None:
        """The JSON label the template asks for: ``adversarial`` correct when the
        prediction abstains; ``Cognitive`` when it holds half the cue's words or more;
        the others correct when it holds every word of the reference answer, partial
        (where the template offers it) when half or more."""
        for category, template in self._templates.items():
            fields = format_fields(template, text)
            if fields is None:
                continue
            if category == "adversarial":
                label = "correct" if abstains(fields["pred"]) else "wrong"
            elif category == "Cognitive":
                label = "correct" if covered(fields["evidence"], fields["pred"]) >= 0.5 else "wrong"
            else:
                share = covered(fields["gold"], fields["pred"])
                partial = '"partial"' in template and share >= 0.5
                label = "correct" if share == 1.0 else "partial" if partial else "wrong"
            return json.dumps({"label": label, "reason": "offline: word overlap"})
        return None

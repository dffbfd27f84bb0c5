"""A benchmark defined outside himga, as a third party would: ToyQA.

Nothing here is imported by himga itself; ``tests/benchmarks/test_benchmarks.py`` registers
it through the ``himga.benchmarks`` entry-point group (a dist-info made at test
time) or :func:`himga.benchmarks.register_benchmark`.

A ToyQA file is a JSON list of dialogues: ``{"id", "date", "turns": [{"speaker",
"text"}], "questions": [{"question", "answer", "kind", "evidence": [turn index],
"keywords": [...]}]}``. ``kind`` is ``"recall"`` or ``"trap"`` (a question the
dialogue cannot answer, left out of the headline). The judge asks for MATCH / MISS
and also reads the question's gold keywords; the benchmark contributes a
per-question metric (``keyword_hit``) and a run metric (``toyqa_summary``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from himga.benchmarks import JSONValue, JudgeRequest, UnjudgeableError
from himga.data import DatasetError, DownloadError, Message, QAPair, Sample, Session
from himga.eval import EvalResult, Metric, RunMetric

FILE = "toyqa.json"
CATEGORIES = ("recall", "trap")
PROMPT = (
    "Question: {question}\nGold answer: {answer}\nKeywords: {keywords}\n"
    "Response: {response}\nReply MATCH or MISS."
)


class ToyJudge:
    """One MATCH / MISS call per question; parsed to a JSON object."""

    prompts: Mapping[str, str] = {"toyqa-match": PROMPT}

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        text = PROMPT.format(
            question=result.question,
            answer=result.answer,
            keywords=", ".join(result.gold.get("keywords", ())),
            response=result.prediction,
        )
        return [JudgeRequest("toyqa-match", text, 5)]

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        words = {word for word in ("MATCH", "MISS") if word in reply.upper()}
        if len(words) != 1:
            raise UnjudgeableError(f"no single verdict in {reply!r}")
        return {"match": words == {"MATCH"}}

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        (verdict,) = parsed
        assert isinstance(verdict, Mapping)
        return 1.0 if verdict["match"] else 0.0

    def offline_reply(self, text: str) -> str | None:
        """MATCH when the response names every keyword (MISS without keywords)."""
        head, found, response = text.partition("\nResponse: ")
        if not (head.startswith("Question: ") and found and "\nKeywords: " in head):
            return None
        keywords = [k for k in head.partition("\nKeywords: ")[2].split(", ") if k]
        hit = bool(keywords) and all(k.lower() in response.lower() for k in keywords)
        return "MATCH" if hit else "MISS"


def _keyword_hit(result: EvalResult, judge: float | None) -> float | None:
    keywords = [str(k).lower() for k in result.gold.get("keywords", ())]
    if not keywords or result.prediction is None:
        return None
    return sum(k in result.prediction.lower() for k in keywords) / len(keywords)


def _summary(results: Sequence[EvalResult]) -> JSONValue:
    return {"dialogues": len({r.sample_id for r in results}), "questions": len(results)}


KEYWORD_HIT = Metric(
    name="keyword_hit",
    title="KW",
    needs="prediction",
    score=_keyword_hit,
    in_table=True,
    description="share of the gold keywords the answer names",
)
SUMMARY = RunMetric("toyqa_summary", "dialogues and questions scored", _summary)


@dataclass(frozen=True)
class ToyQA:
    """The benchmark: a frozen dataclass satisfies the protocol's read-only members."""

    name: str = "toyqa"
    description: str = "ToyQA: tiny dialogues with recall and trap questions"
    license: str = "CC0-1.0"
    categories: Sequence[str] = CATEGORIES
    headline_excludes: frozenset[str] = frozenset({"trap"})
    judge: ToyJudge = field(default_factory=ToyJudge)
    metrics: Sequence[Metric | RunMetric] = (KEYWORD_HIT, SUMMARY)

    def locate(self, directory: Path) -> Path | None:
        for place in (directory / self.name, directory):
            if (place / FILE).is_file():
                return place / FILE
        return None

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        raise DownloadError("ToyQA has no download")

    def guidance(self, cache: Path) -> str:
        return f"write {FILE} into $HIMGA_DATA_DIR/{self.name}/ or {cache}"

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        for raw in json.loads(path.read_text("utf-8")):
            if wanted is None or raw["id"] in wanted:
                yield _sample(path, raw, self.name)


def _sample(path: Path, raw: dict[str, object], dataset: str) -> Sample:
    dialogue = str(raw["id"])
    turns = raw["turns"]
    assert isinstance(turns, list)
    messages = [Message(t["speaker"], t["text"], f"{dialogue}:{i}") for i, t in enumerate(turns)]
    questions = raw["questions"]
    assert isinstance(questions, list)
    qa_pairs = []
    for n, q in enumerate(questions):
        if q["kind"] not in CATEGORIES:
            raise DatasetError(path, f"unknown kind {q['kind']!r}", sample=dialogue, field="kind")
        qa_pairs.append(
            QAPair(
                question_id=f"{dialogue}:q{n}",
                question=q["question"],
                answer=q["answer"],
                category=q["kind"],
                evidence_turns=[f"{dialogue}:{i}" for i in q["evidence"]],
                adversarial=q["kind"] == "trap",
                gold={"keywords": q["keywords"]},
            )
        )
    session = Session(f"{dialogue}:s", messages, date_str=str(raw["date"]))
    return Sample(dialogue, dataset, [session], qa_pairs)


def benchmarks() -> tuple[ToyQA, ...]:
    """The entry point's value: ToyQA and a '-mini' variant (one callable, many benchmarks)."""
    return (ToyQA(), ToyQA(name="toyqa-mini", description="ToyQA under a second name"))


def write_toyqa(path: Path) -> Path:
    """A small ToyQA file: two dialogues, four questions (one trap)."""
    dialogues = [
        {
            "id": "d1",
            "date": "2024-05-01",
            "turns": [
                {"speaker": "Ann", "text": "I flew to Paris for the marathon."},
                {"speaker": "Bob", "text": "Did you finish it?"},
                {"speaker": "Ann", "text": "Yes, in four hours, with my sister Lea."},
            ],
            "questions": [
                {"question": "Where did Ann fly?", "answer": "Paris", "kind": "recall",
                 "evidence": [0], "keywords": ["Paris"]},
                {"question": "Who ran with Ann?", "answer": "her sister Lea", "kind": "recall",
                 "evidence": [2], "keywords": ["Lea", "sister"]},
                {"question": "What did Bob eat?", "answer": "not said", "kind": "trap",
                 "evidence": [], "keywords": []},
            ],
        },
        {
            "id": "d2",
            "date": "2024-06-01",
            "turns": [
                {"speaker": "Cy", "text": "My new guitar is a red Fender."},
                {"speaker": "Di", "text": "Nice colour."},
            ],
            "questions": [
                {"question": "What colour is the guitar?", "answer": "red", "kind": "recall",
                 "evidence": [0], "keywords": ["red"]},
            ],
        },
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dialogues), "utf-8")
    return path

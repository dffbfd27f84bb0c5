"""One evaluated question: what was asked, what came back, and the gold to score it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from himga.data.schema import plain_category

__all__ = ["SEARCH_K", "EvalResult", "MemoryCallError"]

#: The default search depth: hits asked of a searchable memory per question.
SEARCH_K = 50


@dataclass(frozen=True, slots=True)
class MemoryCallError:
    """A call into the memory that failed, recorded on the question it cost.

    ``method`` is ``"reset"``, ``"ingest"``, ``"retrieve"`` or ``"search"`` (or
    ``"worker"``: the Ray worker holding the sample died or failed, type ``WorkerError``);
    ``type`` names the exception (``"MemoryCallTimeout"`` for a call that
    exceeded the run's memory timeout, ``"TypeError"`` for a return value of the
    wrong type) and ``message`` is its text. When the memory's code raised it,
    ``raised_at`` is where (``file:line in function``, the innermost frame) and
    ``traceback`` the memory's frames (``None`` otherwise, and in runs written
    before these fields existed). A failed ``reset`` or ``ingest`` is recorded on
    every question of its sample.
    """

    sample_id: str
    question_id: str
    method: str
    type: str
    message: str
    raised_at: str | None = None
    traceback: str | None = None

    def __str__(self) -> str:
        return f"{self.method} raised {self.type}: {self.message}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryCallError:
        """The inverse of :func:`dataclasses.asdict`; ``KeyError`` on a missing field."""
        return cls(
            sample_id=str(data["sample_id"]),
            question_id=str(data["question_id"]),
            method=str(data["method"]),
            type=str(data["type"]),
            message=str(data["message"]),
            raised_at=_optional_text(data.get("raised_at")),
            traceback=_optional_text(data.get("traceback")),
        )


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class EvalResult:
    """The record of one question of a run.

    Gold fields (``answer``, ``adversarial``, ``evidence_turns``,
    ``evidence_texts``, ``gold``) are copied from the sample by the evaluation loop, on the
    evaluator's side; the agent and the memory never see them.

    * ``evidence_texts[i]`` is the text of the turn ``evidence_turns[i]`` in the
      sample, ``None`` when the sample has no such turn.
    * ``context`` is what the memory retrieved for the question.
    * ``ranked_turn_ids`` are the turn ids of ``search(question, k)``, best
      first, for memories implementing :class:`~himga.memory.SearchableMemory`;
      ``None`` otherwise.
    * ``prediction`` is ``None`` when no answer was produced: the run had no LLM,
      or the call failed (then ``error`` says why). A result with an error is
      reported, never scored.
    * ``memory_error`` is set when a call into the memory failed for this
      question (then ``context`` is ``""`` and nothing was asked of the LLM);
      such a result is counted, never scored.
    * ``category`` is a plain ``str``, one of its benchmark's categories; ``gold``
      is the question's benchmark-specific gold (``QAPair.gold``), for the judge.
    * ``latency_s`` is the LLM call's wall time (``None`` without a call);
      ``retrieval_latency_s`` that of ``retrieve`` (and ``search``).
    """

    sample_id: str
    question_id: str
    dataset: str
    category: str
    question: str
    answer: str
    adversarial: bool
    evidence_turns: tuple[str, ...]
    evidence_texts: tuple[str | None, ...]
    context: str
    ranked_turn_ids: tuple[str | None, ...] | None
    retrieval_latency_s: float
    prediction: str | None = None
    error: str | None = None
    latency_s: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    memory_error: MemoryCallError | None = None
    gold: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", plain_category(self.category))

    @property
    def key(self) -> tuple[str, str]:
        """``(sample_id, question_id)``, unique within a run."""
        return (self.sample_id, self.question_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``gold`` only when it is not empty (so a LoCoMo record is
        what it was before the field existed)."""
        data = asdict(self)
        if not self.gold:
            del data["gold"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """The inverse of :meth:`to_dict`; ``KeyError`` / ``ValueError`` / ``TypeError`` on a
        malformed record (a text field holding a list, a latency a string)."""
        ranked = data["ranked_turn_ids"]
        memory_error = data.get("memory_error")
        return cls(
            sample_id=str(data["sample_id"]),
            question_id=str(data["question_id"]),
            dataset=str(data["dataset"]),
            category=str(data["category"]),
            question=str(data["question"]),
            answer=str(data["answer"]),
            adversarial=bool(data["adversarial"]),
            evidence_turns=tuple(data["evidence_turns"]),
            evidence_texts=tuple(data["evidence_texts"]),
            context=str(data["context"]),
            ranked_turn_ids=None if ranked is None else tuple(ranked),
            retrieval_latency_s=float(data["retrieval_latency_s"]),
            prediction=_optional(data, "prediction", str),
            error=_optional(data, "error", str),
            latency_s=_optional(data, "latency_s", (int, float)),
            input_tokens=int(data["input_tokens"]),
            output_tokens=int(data["output_tokens"]),
            model=_optional(data, "model", str),
            memory_error=None if memory_error is None else MemoryCallError.from_dict(memory_error),
            gold=dict(data.get("gold") or {}),
        )


def _optional(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    """``data[name]``, ``None`` or of ``kind`` (never a boolean), else ``TypeError``."""
    value = data[name]
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"field {name!r}: expected {expected} or null, got {value!r}")
    return value

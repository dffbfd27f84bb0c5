"""Hypothesis strategies for valid raw LoCoMo samples and LongMemEval records, and corruptions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

texts = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x1F600, exclude_categories=["Cs"]), max_size=30
)


@st.composite
def locomo_samples(draw: st.DrawFn, sample_id: str = "conv-1") -> dict[str, Any]:
    """A valid sample in the single-file LoCoMo layout (with messy evidence strings)."""
    speakers = [draw(texts), draw(texts)]
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    dia_ids: list[str] = []
    for number in range(1, draw(st.integers(1, 3)) + 1):
        turns = []
        for index in range(1, draw(st.integers(1, 4)) + 1):
            dia_id = f"D{number}:{index}"
            dia_ids.append(dia_id)
            turn: dict[str, Any] = {"speaker": draw(st.sampled_from(speakers)), "dia_id": dia_id}
            turn["text"] = draw(texts)
            if draw(st.booleans()):
                turn["blip_caption"] = draw(texts)
                turn["img_url"] = ["https://example.invalid/x.jpg"]
            turns.append(turn)
        conversation[f"session_{number}_date_time"] = draw(
            st.sampled_from(["1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023", "someday"])
        )
        conversation[f"session_{number}"] = turns
    qa = []
    for _ in range(draw(st.integers(0, 4))):
        category = draw(st.integers(1, 5))
        chosen = draw(st.lists(st.sampled_from(dia_ids), max_size=3, unique=True))
        separator = draw(st.sampled_from(["; ", " ", ", "]))
        joined: bool = draw(st.booleans())
        evidence = [separator.join(chosen)] if chosen and joined else chosen
        question: dict[str, Any] = {
            "question": draw(texts),
            "evidence": evidence,
            "category": category,
        }
        answer = draw(st.one_of(texts, st.integers(0, 3000)))
        question["adversarial_answer" if category == 5 else "answer"] = answer
        qa.append(question)
    return {
        "sample_id": sample_id,
        "conversation": conversation,
        "qa": qa,
        "event_summary": {"events_session_1": {"date": "8 May, 2023"}},
    }


@st.composite
def longmemeval_records(draw: st.DrawFn, question_id: str = "q1") -> dict[str, Any]:
    """A valid LongMemEval record, with ``has_answer`` flags on its answer sessions."""
    n_sessions = draw(st.integers(1, 3))
    session_ids = [f"s{i}" for i in range(n_sessions)]
    answer_sessions = draw(st.lists(st.sampled_from(session_ids), max_size=2, unique=True))
    haystack = []
    for session_id in session_ids:
        turns = []
        for index in range(draw(st.integers(0, 3))):
            turn: dict[str, Any] = {
                "role": "user" if index % 2 == 0 else "assistant",
                "content": draw(texts),
            }
            if session_id in answer_sessions:
                turn["has_answer"] = draw(st.booleans())
            turns.append(turn)
        haystack.append(turns)
    return {
        "question_id": question_id + draw(st.sampled_from(["", "_abs"])),
        "question_type": draw(
            st.sampled_from(["single-session-user", "multi-session", "temporal-reasoning"])
        ),
        "question": draw(texts),
        "answer": draw(st.one_of(texts, st.integers(0, 100))),
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": session_ids,
        "haystack_dates": ["2023/05/20 (Sat) 02:21"] * n_sessions,
        "haystack_sessions": haystack,
        "answer_session_ids": answer_sessions,
    }


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def read_run(out: Path) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The results, metrics and manifest of the run directory ``out``."""
    results = [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]
    metrics = json.loads((out / "metrics.json").read_text("utf-8"))
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    return results, metrics, manifest

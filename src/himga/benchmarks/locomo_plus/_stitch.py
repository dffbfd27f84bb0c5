"""Stitching a LoCoMo-Plus item into a LoCoMo-10 conversation, deterministically.

Upstream (``data/build_conv.py`` of xjtuleeyf/Locomo-Plus at 059f4e3) picks the
host conversation with an unseeded ``random.choice``; its ``unified_input.py``,
which builds the evaluation input, takes conversation ``i mod 10`` for item
``i``. That is the rule here: item ``i`` of the file goes into the ``i mod n``-th
of the ``n`` host conversations in file order. Then, as upstream does:

* the trigger is asked 7 days after the host's last session (``question_date``);
* the cue is dated ``gap_days`` before the trigger and becomes a session of its
  own, placed after every leading session dated at or before it (upstream sorts
  sessions and cue by date with a stable sort; LoCoMo-10's session dates
  increase, so this is the same place, and no host turn ever moves);
* ``A`` is the host's first speaker, ``B`` its second.

Unlike upstream, the trigger is not added to the history: it is the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from himga.benchmarks.locomo_plus._items import PlusItem, Turn, item_id
from himga.data._errors import DatasetError
from himga.data.schema import Message, QAPair, Sample, Session

__all__ = ["COGNITIVE", "CUE_SESSION", "QUERY_DELAY", "cue_text", "stitch"]

#: The session id of the inserted cue; its turns are ``"cue:1"``, ``"cue:2"``, ...
CUE_SESSION = "cue"
#: How long after the host's last session the trigger comes (upstream: 7 days).
QUERY_DELAY = timedelta(days=7)
#: Upstream's category name for LoCoMo-Plus items (its judge template's name).
COGNITIVE = "Cognitive"

# Spelled out: strftime("%B") follows the process locale.
_MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)


def _locomo_date(moment: datetime) -> str:
    """``moment`` in LoCoMo's own layout, e.g. ``"1:56 pm on 8 May, 2023"``."""
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    month = _MONTHS[moment.month - 1]
    return f"{hour}:{moment.minute:02d} {half} on {moment.day} {month}, {moment.year}"


def cue_text(turns: Sequence[Turn], speakers: tuple[str, str]) -> str:
    """The cue as upstream hands it to its judge: ``"<name>：<text>"`` lines (full-width colon)."""
    return "\n".join(f"{_name(t, speakers)}\uff1a{t.text}" for t in turns)


def stitch(item: PlusItem, host: Sample, *, dataset: str, host_file: str) -> Sample:
    """The sample of ``item``: ``host``'s sessions with the cue inserted, and the trigger.

    The question is the trigger (``"<name>: <text>"`` lines), its category the
    item's relation type, its evidence the cue's turn ids, its ``gold`` what the
    cognitive judge reads (``"evidence"``: :func:`cue_text`; ``"upstream_category"``:
    ``"Cognitive"``) and the ``time_gap``. ``host``'s questions are not kept.
    Raises :class:`~himga.data.DatasetError` (naming ``host_file``, the host
    sample and the field) when a host session has no parsed date.
    """
    if not host.sessions:
        raise DatasetError(host_file, "has no session to stitch into", sample=repr(host.sample_id))
    speakers = _speakers(host, host_file)
    dates = []
    for session in host.sessions:
        if session.date is None:
            raise DatasetError(
                host_file,
                f"session date {session.date_str!r} cannot be read, so the cue cannot be placed",
                sample=repr(host.sample_id),
                field=f"conversation.{session.session_id}_date_time",
            )
        dates.append(session.date)
    query_date = dates[-1] + QUERY_DELAY
    cue_date = query_date - timedelta(days=item.gap_days)
    position = 0
    while position < len(dates) and dates[position] <= cue_date:
        position += 1
    cue = Session(
        session_id=CUE_SESSION,
        messages=[
            Message(role=_name(t, speakers), content=t.text, turn_id=f"{CUE_SESSION}:{k}")
            for k, t in enumerate(item.cue, start=1)
        ],
        date_str=_locomo_date(cue_date),
        date=cue_date,
    )
    sessions = [*host.sessions[:position], cue, *host.sessions[position:]]
    sample_id = item_id(item.index)
    evidence = [m.turn_id for m in cue.messages if m.turn_id is not None]
    gold: dict[str, Any] = {
        "upstream_category": COGNITIVE,
        "evidence": cue_text(item.cue, speakers),
        "time_gap": item.time_gap,
        "gap_days": item.gap_days,
    }
    question = QAPair(
        question_id=f"{sample_id}:trigger",
        question="\n".join(f"{_name(t, speakers)}: {t.text}" for t in item.trigger),
        answer="",
        category=item.relation_type,
        evidence=evidence,
        evidence_turns=evidence,
        gold=gold,
    )
    return Sample(
        sample_id=sample_id,
        dataset=dataset,
        sessions=sessions,
        qa_pairs=[question],
        speakers=speakers,
        question_date=_locomo_date(query_date),
        metadata={
            "host": host.sample_id,
            "cue_position": position,
            "time_gap": item.time_gap,
            "gap_days": item.gap_days,
            "item": dict(item.extras),
        },
    )


def _speakers(host: Sample, host_file: str) -> tuple[str, str]:
    if len(host.speakers) != 2:
        raise DatasetError(
            host_file,
            f"expected two speakers, found {len(host.speakers)}",
            sample=repr(host.sample_id),
            field="conversation.speaker_a",
        )
    return host.speakers[0], host.speakers[1]


def _name(turn: Turn, speakers: tuple[str, str]) -> str:
    # Upstream's map_speaker: "A" is the first speaker, anything else the second.
    return speakers[0] if turn.speaker == "A" else speakers[1]

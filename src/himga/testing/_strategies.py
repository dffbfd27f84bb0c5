"""Hypothesis strategies for the conversation data a memory receives and the queries it answers."""

from __future__ import annotations

from hypothesis import strategies as st

from himga.data.schema import Message, Session

__all__ = [
    "EVAL_DATES",
    "EVAL_SESSION_IDS",
    "EVAL_TURN_IDS",
    "SPEAKERS",
    "blank_texts",
    "messages",
    "queries",
    "roles",
    "session_dates",
    "session_ids",
    "sessions",
    "texts",
    "turn_ids",
]

# What benchmark traffic looks like, in both raw formats (see himga.data): LoCoMo's
# speakers are people and its turn ids are dia_ids "D<session>:<n>"; LongMemEval's
# roles are user / assistant and its turn ids "<haystack session id>:<index>".
# The pools are small on purpose: real runs reuse these ids in every sample, so the
# generated programs reuse them across resets and across instances too.
SPEAKERS = ("user", "assistant", "Caroline", "Melanie")
EVAL_SESSION_IDS = ("session_1", "session_2", "answer_4be1b6b4_2", "sharegpt_yywfWOg_0")
EVAL_TURN_IDS = ("D1:1", "D1:2", "D2:1")
EVAL_DATES = ("1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023", "2023/05/20 (Sat) 02:21")

# Characters for which str.isspace() holds, ASCII and beyond (NBSP, ideographic space, ...).
_WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
_EMOJI = (
    "😀",
    "🧗",
    "🏔️",
    "👩‍👩‍👧",  # ZWJ sequence
    "👍🏽",  # skin-tone modifier
    "🇯🇵",  # regional-indicator flag
    "❤️",
)


def blank_texts() -> st.SearchStrategy[str]:
    """The empty string and whitespace-only strings (ASCII and unicode whitespace)."""
    return st.just("") | st.text(st.sampled_from(_WHITESPACE), min_size=1, max_size=20)


def texts(max_size: int | None = None) -> st.SearchStrategy[str]:
    """Any text a conversation may hold.

    Full unicode (no lone surrogates, which ``str`` from real data never holds),
    CJK, emoji (including ZWJ sequences and flags), empty and whitespace-only
    strings, and very long strings (up to tens of thousands of characters, cut
    to ``max_size`` characters when given).
    """
    cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1)
    emoji = st.lists(st.sampled_from(_EMOJI), min_size=1, max_size=8).map("".join)
    mixed = st.lists(st.text(max_size=6) | cjk | emoji, min_size=2, max_size=4).map(" ".join)
    very_long = st.builds(
        lambda unit, times: unit * times,
        st.text(min_size=1, max_size=8),
        st.integers(min_value=1_000, max_value=5_000),
    )
    anything = st.one_of(st.text(), cjk, emoji, mixed, blank_texts(), very_long)
    if max_size is None:
        return anything
    return anything.map(lambda text: text[:max_size])


def queries() -> st.SearchStrategy[str]:
    """Queries: everything :func:`texts` generates, blank ones included."""
    return texts()


def roles() -> st.SearchStrategy[str]:
    """A chat role (LongMemEval), a speaker's name (LoCoMo), or any short text."""
    return st.sampled_from(SPEAKERS) | st.text(max_size=12)


def turn_ids() -> st.SearchStrategy[str | None]:
    """No id, a LoCoMo ``D<session>:<n>`` id, or a LongMemEval ``<session id>:<index>`` id."""
    longmemeval = st.builds(
        "{}:{}".format, st.sampled_from(EVAL_SESSION_IDS[2:]), st.integers(0, 12)
    )
    locomo = st.from_regex(r"D[0-9]{1,2}:[0-9]{1,3}", fullmatch=True)
    return st.none() | st.sampled_from(EVAL_TURN_IDS) | locomo | longmemeval


def session_ids() -> st.SearchStrategy[str]:
    """LoCoMo (``session_<n>``) and LongMemEval haystack session ids, or any short text."""
    return st.sampled_from(EVAL_SESSION_IDS) | st.text(min_size=1, max_size=12)


def session_dates() -> st.SearchStrategy[str | None]:
    """No date, either benchmark's raw date format, or text no parser understands."""
    return st.none() | st.sampled_from([*EVAL_DATES, "2024-01-01", "sometime"])


def messages() -> st.SearchStrategy[Message]:
    """Messages with any content; the role is a chat role or a speaker's name."""
    return st.builds(Message, role=roles(), content=texts(), turn_id=turn_ids())


def sessions(*, max_messages: int = 3) -> st.SearchStrategy[Session]:
    """Sessions holding up to ``max_messages`` messages, with or without a (parseable) date."""
    return st.builds(
        Session,
        session_id=session_ids(),
        messages=st.lists(messages(), max_size=max_messages),
        date_str=session_dates(),
    )

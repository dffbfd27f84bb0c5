"""Hypothesis strategies for the conversation data a memory receives and the queries it answers."""

from __future__ import annotations

from hypothesis import strategies as st

from himga.data.schema import Message, Session

__all__ = ["blank_texts", "messages", "queries", "sessions", "texts"]

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


def texts() -> st.SearchStrategy[str]:
    """Any text a conversation may hold.

    Full unicode (no lone surrogates, which ``str`` from real data never holds),
    CJK, emoji (including ZWJ sequences and flags), empty and whitespace-only
    strings, and very long strings (up to tens of thousands of characters).
    """
    cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1)
    emoji = st.lists(st.sampled_from(_EMOJI), min_size=1, max_size=8).map("".join)
    mixed = st.lists(st.text(max_size=6) | cjk | emoji, min_size=2, max_size=4).map(" ".join)
    very_long = st.builds(
        lambda unit, times: unit * times,
        st.text(min_size=1, max_size=8),
        st.integers(min_value=1_000, max_value=5_000),
    )
    return st.one_of(st.text(), cjk, emoji, mixed, blank_texts(), very_long)


def queries() -> st.SearchStrategy[str]:
    """Queries: everything :func:`texts` generates, blank ones included."""
    return texts()


def messages() -> st.SearchStrategy[Message]:
    """Messages with any content; the role is a chat role or a speaker's name."""
    roles = st.sampled_from(["user", "assistant", "Caroline", "Melanie"]) | st.text(max_size=12)
    turn_ids = st.none() | st.from_regex(r"D[0-9]{1,2}:[0-9]{1,3}", fullmatch=True)
    return st.builds(Message, role=roles, content=texts(), turn_id=turn_ids)


def sessions(*, max_messages: int = 3) -> st.SearchStrategy[Session]:
    """Sessions holding up to ``max_messages`` messages, with or without a (parseable) date."""
    date_strs = st.none() | st.sampled_from(
        ["1:56 pm on 8 May, 2023", "2023/05/20 (Sat) 02:21", "2024-01-01", "sometime"]
    )
    return st.builds(
        Session,
        session_id=st.text(min_size=1, max_size=12),
        messages=st.lists(messages(), max_size=max_messages),
        date_str=date_strs,
    )

"""LoCoMo-Plus: deterministic stitching into LoCoMo-10, the registrations, the real file."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga._loopback import LoopbackService
from himga.benchmarks import Benchmark, get_benchmark, load_dataset
from himga.benchmarks.locomo_plus import (
    CUE_SESSION,
    FILE,
    LocomoPlus,
    PlusItem,
    Turn,
    benchmarks,
    read_items,
    stitch,
)
from himga.data import (
    ChecksumMismatchError,
    DatasetError,
    DatasetNotFoundError,
    EvidenceWarning,
    Message,
    Sample,
    Session,
)
from tests.conftest import SHARED_DATASETS
from tests.data_fixtures import write_json

# --- stitching, on hand-made hosts -------------------------------------------------

_START = datetime(2023, 1, 1, 10, 0)


def _host(dates: list[datetime], sample_id: str = "conv-1") -> Sample:
    sessions = [
        Session(
            session_id=f"session_{n}",
            messages=[
                Message(role="Ann" if k % 2 else "Bob", content=f"s{n} t{k}", turn_id=f"D{n}:{k}")
                for k in (1, 2)
            ],
            date=date,
            date_str=date.isoformat(),
        )
        for n, date in enumerate(dates, start=1)
    ]
    return Sample(sample_id=sample_id, dataset="locomo", sessions=sessions, speakers=("Ann", "Bob"))


def _item(gap_days: int, index: int = 0, relation: str = "causal") -> PlusItem:
    return PlusItem(
        index=index,
        relation_type=relation,
        cue=(Turn("A", "I learned to say no."), Turn("B", "Good for you.")),
        trigger=(Turn("A", "I volunteered again and I'm swamped."),),
        time_gap=f"{gap_days} days later",
        gap_days=gap_days,
        extras={},
    )


def _session_ids(sample: Sample) -> list[str]:
    return [s.session_id for s in sample.sessions]


# Hosts on 1 Jan, 1 Feb, 1 Mar 2023 (10:00): the trigger comes on 8 Mar, 10:00.
_HAND = [_START, datetime(2023, 2, 1, 10, 0), datetime(2023, 3, 1, 10, 0)]


@pytest.mark.parametrize(
    ("gap_days", "cue_date", "position"),
    [
        (7, datetime(2023, 3, 1, 10, 0), 3),  # same moment as the last session: after it
        (8, datetime(2023, 2, 28, 10, 0), 2),
        (30, datetime(2023, 2, 6, 10, 0), 2),
        (35, datetime(2023, 2, 1, 10, 0), 2),  # a tie goes after the session
        (36, datetime(2023, 1, 31, 10, 0), 1),
        (60, datetime(2023, 1, 7, 10, 0), 1),
        (365, datetime(2022, 3, 8, 10, 0), 0),  # before the first session
    ],
)
def test_cue_placement_hand_worked(gap_days: int, cue_date: datetime, position: int) -> None:
    sample = stitch(_item(gap_days), _host(_HAND), dataset="locomo-plus", host_file="h.json")
    cue = sample.sessions[position]
    assert cue.session_id == CUE_SESSION
    assert cue.date == cue_date
    assert sample.question_date == "10:00 am on 8 March, 2023"
    assert sample.metadata["cue_position"] == position


def test_stitched_sample_fields() -> None:
    sample = stitch(_item(30, index=7), _host(_HAND), dataset="locomo-plus", host_file="h.json")
    assert sample.sample_id == "plus-007"
    cue = sample.sessions[2]
    assert [(m.role, m.content, m.turn_id) for m in cue.messages] == [
        ("Ann", "I learned to say no.", "cue:1"),
        ("Bob", "Good for you.", "cue:2"),
    ]
    assert cue.date_str == "10:00 am on 6 February, 2023"
    (qa,) = sample.qa_pairs
    assert qa.question_id == "plus-007:trigger"
    assert qa.question == "Ann: I volunteered again and I'm swamped."
    assert qa.category == "causal"
    assert qa.answer == ""
    assert tuple(qa.evidence) == tuple(qa.evidence_turns) == ("cue:1", "cue:2")
    assert dict(qa.gold) == {
        "upstream_category": "Cognitive",
        "evidence": "Ann：I learned to say no.\nBob：Good for you.",
        "time_gap": "30 days later",
        "gap_days": 30,
    }
    assert sample.speakers == ("Ann", "Bob")
    # the trigger is the question, never a turn of the history
    assert all("swamped" not in m.content for _, m in sample.iter_turns())


@st.composite
def hosts(draw: st.DrawFn) -> Sample:
    gaps = draw(st.lists(st.integers(0, 90), min_size=1, max_size=8))
    dates, moment = [], _START
    for gap in gaps:  # non-decreasing, ties included, as a date axis may have
        moment += timedelta(days=gap, minutes=draw(st.sampled_from([0, 0, 37])))
        dates.append(moment)
    return _host(dates)


@given(hosts(), st.integers(0, 800), st.integers(0, 1000))
def test_stitching_keeps_every_host_turn_in_order_and_places_the_cue_by_date(
    host: Sample, gap_days: int, index: int
) -> None:
    item = _item(gap_days, index=index)
    sample = stitch(item, host, dataset="locomo-plus", host_file="h.json")
    again = stitch(item, host, dataset="locomo-plus", host_file="h.json")
    assert sample == again  # deterministic
    sessions = list(sample.sessions)
    position = _session_ids(sample).index(CUE_SESSION)
    assert sessions[:position] + sessions[position + 1 :] == list(host.sessions)
    assert [m for _, m in sample.iter_turns() if m.turn_id and m.turn_id.startswith("D")] == [
        m for _, m in host.iter_turns()
    ]
    cue_date = sessions[position].date
    assert cue_date is not None
    assert all(s.date is not None and s.date <= cue_date for s in sessions[:position])
    assert position == len(sessions) - 1 or (sessions[position + 1].date or cue_date) > cue_date
    last = host.sessions[-1].date
    assert last is not None
    assert cue_date == last + timedelta(days=7 - gap_days)


def test_host_without_a_parsed_date_is_an_error_naming_host_and_field() -> None:
    host = _host(_HAND)
    broken = Sample(
        sample_id=host.sample_id,
        dataset="locomo",
        sessions=[*host.sessions[:1], Session("session_2", host.sessions[1].messages, "someday")],
        speakers=host.speakers,
    )
    with pytest.raises(DatasetError) as caught:
        stitch(_item(7), broken, dataset="locomo-plus", host_file="locomo10.json")
    assert caught.value.file == "locomo10.json"
    assert caught.value.sample == "'conv-1'"
    assert caught.value.field == "conversation.session_2_date_time"
    assert "'someday' cannot be read" in str(caught.value)


# --- the registrations --------------------------------------------------------------


def test_registered_by_entry_point() -> None:
    plain, unified = benchmarks()
    for benchmark in (plain, unified):
        typed: Benchmark = benchmark
        registered = get_benchmark(typed.name)
        assert isinstance(registered, LocomoPlus)
        assert (registered.name, registered.unified) == (benchmark.name, benchmark.unified)
        assert registered.categories == typed.categories
    assert plain.categories == ("causal", "state", "goal", "value")
    assert unified.categories[-4:] == plain.categories
    assert unified.headline_excludes == frozenset({"adversarial"})


def test_locate(tmp_path: Path) -> None:
    plain = benchmarks()[0]
    assert plain.locate(tmp_path) is None
    (tmp_path / "locomo_plus").mkdir()
    (tmp_path / "locomo_plus" / FILE).write_text("[]", encoding="utf-8")
    assert plain.locate(tmp_path) == tmp_path / "locomo_plus" / FILE
    (tmp_path / FILE).write_text("[]", encoding="utf-8")
    assert plain.locate(tmp_path) == tmp_path / FILE


def test_missing_host_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    # One level down: the loader also looks beside the file's directory, which for
    # tmp_path itself is pytest's shared base directory, holding other tests' files.
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / FILE
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetNotFoundError, match="stitched into LoCoMo-10"):
        list(benchmarks()[0].load(path, None))


# --- the real file --------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_plus() -> Path:
    """``../shared/datasets`` with LoCoMo-Plus and LoCoMo-10: fails under CI when missing."""
    root = Path(os.environ.get("HIMGA_DATA_DIR", SHARED_DATASETS))
    for needed in (root / "locomo_plus" / FILE, root / "locomo" / "locomo10.json"):
        if not needed.is_file():
            message = f"the shared LoCoMo-Plus data is missing: {needed}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
    return root


@pytest.fixture(scope="module")
def real(shared_plus: Path) -> list[Sample]:
    return load_dataset("locomo-plus", path=shared_plus / "locomo_plus")


@pytest.fixture(scope="module")
def locomo(shared_plus: Path) -> list[Sample]:
    with pytest.warns(EvidenceWarning, match="3 evidence ids"):
        return load_dataset("locomo", path=shared_plus / "locomo" / "locomo10.json")


def test_real_counts_by_relation_type(real: list[Sample]) -> None:
    assert len(real) == 401
    assert all(len(s.qa_pairs) == 1 for s in real)
    counts = Counter(s.qa_pairs[0].category for s in real)
    assert counts == {"causal": 101, "state": 100, "goal": 100, "value": 100}


def test_real_hosts_and_turns(real: list[Sample], locomo: list[Sample]) -> None:
    for index, sample in enumerate(real):
        host = locomo[index % len(locomo)]
        assert sample.sample_id == f"plus-{index:03d}"
        assert sample.metadata["host"] == host.sample_id
        assert sample.speakers == host.speakers
        kept = [s for s in sample.sessions if s.session_id != CUE_SESSION]
        assert kept == list(host.sessions)  # every LoCoMo turn, in order
        (qa,) = sample.qa_pairs
        cue = sample.sessions[sample.metadata["cue_position"]]
        assert tuple(qa.evidence_turns) == tuple(m.turn_id for m in cue.messages)


# The items upstream's parse_time_gap (build_conv.py at 059f4e3) reads as 0 days, and ours.
UPSTREAM_ZERO = {
    "several months later": 90,
    "several years later": 3 * 365,
    "several weeks later": 21,
    "a couple of months later": 60,
    "a few weeks later": 21,
}
# Upstream's reading of the 386 other items, by days (computed by running it on the file).
UPSTREAM_DAYS = {
    *(((7, 18), (14, 13), (21, 20), (30, 57), (42, 36), (49, 1), (56, 1), (60, 61))),
    *(((90, 64), (120, 30), (150, 11), (180, 41), (210, 6), (240, 10), (270, 8), (365, 9))),
}


def test_real_gaps_agree_with_upstream_where_it_reads_them(real: list[Sample]) -> None:
    gaps = [(s.metadata["time_gap"], s.metadata["gap_days"]) for s in real]
    vague = Counter(gap for gap, days in gaps if UPSTREAM_ZERO.get(gap) == days)
    assert vague == {
        "several months later": 11,
        "several years later": 1,
        "several weeks later": 1,
        "a couple of months later": 1,
        "a few weeks later": 1,
    }
    others = Counter(days for gap, days in gaps if gap not in UPSTREAM_ZERO)
    assert set(others.items()) == UPSTREAM_DAYS


def test_real_loading_is_deterministic(shared_plus: Path, real: list[Sample]) -> None:
    again = load_dataset("locomo-plus", path=shared_plus / "locomo_plus")
    assert again == real
    items = read_items(shared_plus / "locomo_plus" / FILE)
    assert [i.time_gap for i in items] == [s.metadata["time_gap"] for s in real]


def test_real_unified_keeps_locomo_questions(shared_plus: Path, locomo: list[Sample]) -> None:
    # the hosts' own questions are asked here, so their evidence quirks are reported
    with pytest.warns(EvidenceWarning, match="3 evidence ids"):
        unified = load_dataset("locomo-plus-unified", path=shared_plus / "locomo_plus")
    assert len(unified) == 10 + 401
    hosts = unified[:10]
    assert [s.sample_id for s in hosts] == [s.sample_id for s in locomo]
    assert sum(len(s.qa_pairs) for s in hosts) == 1986
    for got, original in zip(hosts, locomo, strict=True):
        assert got.sessions == original.sessions
        for qa, before in zip(got.qa_pairs, original.qa_pairs, strict=True):
            assert (qa.question_id, qa.category, qa.answer) == (
                before.question_id,
                before.category,
                before.answer,
            )
    upstream = Counter(qa.gold["upstream_category"] for s in unified for qa in s.qa_pairs)
    assert upstream == {
        "multi-hop": 282,
        "temporal": 321,
        "common-sense": 96,
        "single-hop": 841,
        "adversarial": 446,
        "Cognitive": 401,
    }


# --- small files through load_dataset ---------------------------------------------------


def _write_upstream_layout(directory: Path, items: Sequence[Mapping[str, object]]) -> Path:
    """``locomo_plus.json`` with a two-conversation ``locomo10.json`` beside it (upstream's
    ``data/`` layout)."""
    hosts = []
    for number in (1, 2):
        conversation: dict[str, object] = {"speaker_a": f"Ann{number}", "speaker_b": "Bob"}
        for session, date in ((1, "1:56 pm on 8 May, 2023"), (2, "10:37 am on 27 June, 2023")):
            conversation[f"session_{session}_date_time"] = date
            conversation[f"session_{session}"] = [
                {"speaker": "Bob", "dia_id": f"D{session}:1", "text": f"hello {session}"}
            ]
        hosts.append({"sample_id": f"conv-{number}", "conversation": conversation, "qa": []})
    write_json(directory / "locomo10.json", hosts)
    return write_json(directory / FILE, items)


_GOOD = {
    "relation_type": "goal",
    "cue_dialogue": "A: I want to run a marathon.",
    "trigger_query": "A: My knees hurt after yesterday's long run.",
    "time_gap": "one month later",
}


def test_small_file_in_upstream_layout(tmp_path: Path) -> None:
    path = _write_upstream_layout(tmp_path, [_GOOD, {**_GOOD, "time_gap": "a year later"}] * 2)
    samples = load_dataset("locomo-plus", path=path)
    assert [(s.sample_id, s.metadata["host"]) for s in samples] == [
        ("plus-000", "conv-1"),
        ("plus-001", "conv-2"),
        ("plus-002", "conv-1"),
        ("plus-003", "conv-2"),
    ]
    # 27 June + 7 days - 30 days = 4 June: between the sessions; a year back: first
    assert [_session_ids(s) for s in samples[:2]] == [
        ["session_1", "cue", "session_2"],
        ["cue", "session_1", "session_2"],
    ]
    assert samples[1].sessions[0].messages[0].role == "Ann2"


@pytest.mark.parametrize("field", ["cue_dialogue", "trigger_query", "time_gap"])
def test_malformed_item_through_load_dataset(tmp_path: Path, field: str) -> None:
    broken = {k: v for k, v in _GOOD.items() if k != field}
    path = _write_upstream_layout(tmp_path, [_GOOD, broken])
    with pytest.raises(DatasetError) as caught:
        load_dataset("locomo-plus", path=path)
    assert str(caught.value) == (f"{path}: sample plus-001 (item #1): field {field!r}: missing")


def test_unreadable_gap_and_truncated_file_through_load_dataset(tmp_path: Path) -> None:
    path = _write_upstream_layout(tmp_path, [{**_GOOD, "time_gap": "some time later"}])
    with pytest.raises(DatasetError, match=r"plus-000 \(item #0\): field 'time_gap': cannot read"):
        load_dataset("locomo-plus", path=path)
    text = path.read_text("utf-8")
    path.write_text(text[:-7], encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{re.escape(str(path))}: invalid JSON"):
        load_dataset("locomo-plus", path=path)


@pytest.fixture
def served() -> Iterator[dict[str, bytes]]:
    """Bodies by path, served on loopback; ``routes["base"]`` is not a route but the URL."""
    routes: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    service = LoopbackService(Handler, name="locomo-plus-files")
    routes["base"] = service.base_url.encode()
    service.start()
    yield routes
    service.stop()


def _serve(routes: dict[str, bytes], path: str, body: bytes) -> str:
    routes[path] = body
    return routes["base"].decode() + path


def test_download_is_verified_and_loads(
    shared_plus: Path,
    served: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_plus))  # LoCoMo-10 is found there
    plain = benchmarks()[0]
    body = (shared_plus / "locomo_plus" / FILE).read_bytes()
    monkeypatch.setenv("HIMGA_LOCOMO_PLUS_URL", _serve(served, "/bad", body[:-1] + b" "))
    with pytest.raises(ChecksumMismatchError):
        plain.download(tmp_path / "bad", show_progress=False)
    assert not list((tmp_path / "bad").glob("*"))  # nothing kept
    monkeypatch.setenv("HIMGA_LOCOMO_PLUS_URL", _serve(served, "/good", body))
    path = plain.download(tmp_path / "cache" / "locomo-plus", show_progress=False)
    assert path.read_bytes() == body
    assert plain.locate(tmp_path / "cache") == path
    assert len(list(plain.load(path, frozenset({"plus-400"})))) == 1

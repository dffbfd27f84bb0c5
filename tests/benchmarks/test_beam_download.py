"""The BEAM download: pinned files, verified, against a server on 127.0.0.1 only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from himga.benchmarks.beam import BeamBenchmark
from himga.benchmarks.beam._download import download_tier, git_blob_id
from himga.benchmarks.beam._manifest import FILES
from himga.data import ChecksumMismatchError, DownloadError
from tests.loopback_server import LoopbackServer


def _conversation() -> dict[str, bytes]:
    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    {
                        "role": "user",
                        "id": 0,
                        "content": "Hi ->-> 1,1",
                        "time_anchor": "May-01-2024",
                    },
                    {"role": "assistant", "id": 1, "content": "Hello."},
                ]
            ],
        }
    ]
    questions = {
        "information_extraction": [
            {"question": "Q?", "answer": "A", "source_chat_ids": [0], "rubric": ["A"]}
        ]
    }
    return {
        "1/chat.json": json.dumps(chat).encode(),
        "1/probing_questions/probing_questions.json": json.dumps(questions).encode(),
    }


def _blob_id(body: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(body) + body, usedforsecurity=False).hexdigest()


def _serve(server: LoopbackServer, files: dict[str, bytes]) -> list[tuple[str, str, str | None]]:
    for name, body in files.items():
        server.routes[f"/chats/100K/{name}"] = body
    return [
        (name, _blob_id(body), hashlib.sha256(body).hexdigest()) for name, body in files.items()
    ]


def test_git_blob_id_is_gits(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello\n")
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_id(tmp_path / "f") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_download_verifies_every_file_and_loads(tmp_path: Path, server: LoopbackServer) -> None:
    files = _conversation()
    manifest = _serve(server, files)
    dest = tmp_path / "cache" / "beam-100k" / "chats" / "100K"
    assert download_tier(manifest, f"{server.base}/chats/100K", dest, show_progress=False) == dest
    for name, body in files.items():
        assert (dest / name).read_bytes() == body
    assert sorted(p.name for p in dest.parent.iterdir()) == ["100K"]  # no staging left
    (sample,) = BeamBenchmark("100K").load(dest, None)
    assert sample.qa_pairs[0].evidence_turns == ("0",)


@pytest.mark.parametrize("pin", ["blob", "sha256"])
def test_a_corrupt_file_is_rejected_and_nothing_kept(
    tmp_path: Path, server: LoopbackServer, pin: str
) -> None:
    files = _conversation()
    manifest = _serve(server, files)
    name, blob_id, sha256 = manifest[1]
    manifest[1] = (name, "0" * 40, sha256) if pin == "blob" else (name, blob_id, "0" * 64)
    dest = tmp_path / "cache" / "beam-100k" / "chats" / "100K"
    with pytest.raises(ChecksumMismatchError, match="expected 0000"):
        download_tier(manifest, f"{server.base}/chats/100K", dest, show_progress=False)
    assert not (tmp_path / "cache").exists()  # neither the files nor the folders made for them


def test_a_truncated_transfer_is_rejected(tmp_path: Path, server: LoopbackServer) -> None:
    manifest = _serve(server, _conversation())
    server.short.add("/chats/100K/1/chat.json")
    with pytest.raises(DownloadError, match="connection closed"):
        download_tier(manifest, f"{server.base}/chats/100K", tmp_path / "t", show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_file_is_a_download_error(tmp_path: Path, server: LoopbackServer) -> None:
    manifest = [*_serve(server, _conversation()), ("2/chat.json", "0" * 40, None)]
    with pytest.raises(DownloadError, match="404"):
        download_tier(manifest, f"{server.base}/chats/100K", tmp_path / "t", show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_destination_is_never_overwritten(
    tmp_path: Path, server: LoopbackServer
) -> None:
    (tmp_path / "t").mkdir()
    with pytest.raises(DownloadError, match="exists already"):
        download_tier([], f"{server.base}/chats/100K", tmp_path / "t", show_progress=False)


def test_the_manifest_pins_the_shared_files(shared_tier: Path) -> None:
    pinned = {name: (blob, sha) for name, blob, sha in FILES["100K"]}
    shared = [p for p in shared_tier.rglob("*.json") if p.name != "topic.json"]
    shared = [p for p in shared if p.name != "user_messages.json"]
    assert len(shared) == 23
    for path in shared:
        blob, sha256 = pinned[path.relative_to(shared_tier).as_posix()]
        assert git_blob_id(path) == blob
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    # Every tier lists each conversation's chat and questions.
    for tier, count in (("100K", 20), ("500K", 35), ("1M", 35), ("10M", 10)):
        names = [name for name, _, _ in FILES[tier]]
        assert sum(n.endswith("/probing_questions/probing_questions.json") for n in names) == count
        assert sum(n.endswith("/chat.json") for n in names) == count


def test_the_benchmark_downloads_its_tier_from_the_url_override(
    shared_tier: Path, tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared conversations (1-10) as the repository at the pinned commit serves them.
    kept = [entry for entry in FILES["100K"] if (shared_tier / entry[0]).is_file()]
    monkeypatch.setitem(FILES, "100K", tuple(kept))
    for name, _, _ in kept:
        server.routes[f"/chats/100K/{name}"] = (shared_tier / name).read_bytes()
    monkeypatch.setenv("HIMGA_BEAM_URL", server.base)
    beam = BeamBenchmark("100K")
    path = beam.download(tmp_path / "beam-100k", show_progress=False)
    assert path == tmp_path / "beam-100k" / "chats" / "100K"
    assert beam.locate(tmp_path) == path
    assert len(list(beam.load(path, None))) == 10

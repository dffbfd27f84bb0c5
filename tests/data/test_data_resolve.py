"""Resolution order and the verified download, against a server on 127.0.0.1 only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from himga.benchmarks import load_dataset, resolve_dataset
from himga.benchmarks.locomo import SPEC as LOCOMO_SPEC
from himga.benchmarks.longmemeval import SPLITS as LONGMEMEVAL_SPLITS
from himga.benchmarks.longmemeval.synthetic import write_longmemeval
from himga.data import (
    ChecksumMismatchError,
    DatasetError,
    DatasetNotFoundError,
    EvidenceWarning,
    UnknownDatasetError,
    UnverifiedDownloadWarning,
)
from tests.loopback_server import LoopbackServer


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("HIMGA_DATA_DIR", raising=False)
    for spec in (LOCOMO_SPEC, *LONGMEMEVAL_SPLITS):
        monkeypatch.delenv(spec.url_env, raising=False)
    directory = tmp_path / "cache"
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(directory))
    return directory


def test_download_verifies_and_caches(
    shared_datasets: Path, cache: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = (shared_datasets / "locomo" / "locomo10.zip").read_bytes()
    monkeypatch.setenv("HIMGA_LOCOMO_URL", server.url("/locomo10.zip", body))
    assert resolve_dataset("locomo").source == "download"
    assert (cache / "locomo" / "locomo10.zip").read_bytes() == body
    assert sorted(p.name for p in (cache / "locomo").iterdir()) == ["locomo10.zip"]
    with pytest.warns(EvidenceWarning):
        samples = load_dataset("locomo")
    assert len(samples) == 10
    assert server.requests == ["/locomo10.zip"]  # the second resolution used the cache
    assert resolve_dataset("locomo").source == "cache"


def test_corrupted_download_is_rejected_and_nothing_kept(
    shared_datasets: Path, cache: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = bytearray((shared_datasets / "locomo" / "locomo10.zip").read_bytes())
    body[1000] ^= 0xFF
    monkeypatch.setenv("HIMGA_LOCOMO_URL", server.url("/locomo10.zip", bytes(body)))
    with pytest.raises(ChecksumMismatchError, match="expected 5c342973"):
        load_dataset("locomo")
    assert not cache.exists()  # neither the file nor the directories made for it


def test_truncated_transfer_is_rejected(
    cache: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.short.add("/cut")
    monkeypatch.setenv("HIMGA_LOCOMO_URL", server.url("/cut", b"PK" * 100))
    with pytest.raises(DatasetNotFoundError, match="download failed"):
        resolve_dataset("locomo")
    assert not cache.exists()


def test_failed_download_says_what_to_get_and_where(
    cache: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIMGA_LOCOMO_URL", server.base + "/missing")
    with pytest.raises(DatasetNotFoundError) as info:
        resolve_dataset("locomo")
    message = str(info.value)
    assert "404" in message
    assert LOCOMO_SPEC.url in message
    assert "5c342973" in message
    assert "$HIMGA_DATA_DIR/locomo/locomo10.zip" in message
    assert str(cache / "locomo" / "locomo10.zip") in message


def test_no_download_gives_guidance(cache: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"longmemeval_s\.json"):
        resolve_dataset("longmemeval_s", download=False)


def test_unverified_download_checks_shape(
    tmp_path: Path, cache: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source.json"
    write_longmemeval(source, questions=3, sessions=2, turns=2, turn_chars=20)
    monkeypatch.setenv("HIMGA_LONGMEMEVAL_S_URL", server.url("/o", source.read_bytes()))
    with pytest.warns(UnverifiedDownloadWarning, match="no pinned sha256"):
        samples = load_dataset("longmemeval_s")
    assert len(samples) == 3
    assert resolve_dataset("longmemeval_s").path == (cache / "longmemeval_s" / "longmemeval_s.json")
    monkeypatch.setenv("HIMGA_LONGMEMEVAL_M_URL", server.url("/html", b"<html>rate limited</html>"))
    with pytest.raises(DatasetError, match="not a JSON array"):
        resolve_dataset("longmemeval_m")
    assert sorted(p.name for p in cache.iterdir()) == ["longmemeval_s"]


def test_resolution_order(
    shared_datasets: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (cache / "locomo").mkdir(parents=True)
    shutil.copy(shared_datasets / "locomo" / "locomo10.zip", cache / "locomo")
    assert resolve_dataset("locomo", download=False).source == "cache"
    monkeypatch.setenv("HIMGA_DATA_DIR", str(shared_datasets))
    found = resolve_dataset("locomo", download=False)
    assert (found.source, found.path) == (
        "HIMGA_DATA_DIR",
        shared_datasets / "locomo" / "locomo10.json",
    )
    explicit = resolve_dataset("locomo", path=cache / "locomo")
    assert (explicit.source, explicit.path) == ("path", cache / "locomo" / "locomo10.zip")


def test_longmemeval_family_directory(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = tmp_path / "data" / "longmemeval"
    family.mkdir(parents=True)
    write_longmemeval(family / "longmemeval_s", questions=1, sessions=1, turns=1, turn_chars=5)
    monkeypatch.setenv("HIMGA_DATA_DIR", str(tmp_path / "data"))
    assert resolve_dataset("longmemeval_s").path == family / "longmemeval_s"
    write_longmemeval(family / "longmemeval_s.json", questions=1, sessions=1, turns=1, turn_chars=5)
    assert resolve_dataset("longmemeval_s").path == family / "longmemeval_s.json"


def test_explicit_path_errors(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        resolve_dataset("locomo", path=tmp_path / "nope")
    with pytest.raises(DatasetNotFoundError, match="holds no copy of 'locomo'"):
        resolve_dataset("locomo", path=tmp_path)


def test_unknown_dataset() -> None:
    with pytest.raises(UnknownDatasetError, match=r"known: (.*, )?locomo, (.*, )?longmemeval_s"):
        load_dataset("locomo11")

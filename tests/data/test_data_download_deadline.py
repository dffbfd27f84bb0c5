"""A download has a total deadline: a server that drips a byte at a time (each wait
well within the per-read timeout) cannot hang the LoCoMo, LoCoMo-Plus or BEAM
downloads, whether it drips the body or the status line (issue 34 item 23)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from himga._loopback import LoopbackService
from himga.benchmarks import resolve_dataset
from himga.benchmarks.beam import BeamBenchmark
from himga.data import DatasetNotFoundError, DownloadError
from himga.data._download import DEADLINE_ENV, DEFAULT_DEADLINE, download_deadline

DRIP = 0.05  # seconds between bytes: far below the 60 s per-read timeout
DEADLINE = 0.6


class _Dripping(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        try:
            if self.path.startswith("/head"):  # not even the status line in time
                payload = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n[]"
            else:
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                payload = b"[" * 1000
            for byte in payload:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(DRIP)
        except OSError:  # the client gave up: what the test wants
            return

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def dripping(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    service = LoopbackService(_Dripping, name="dripping")
    service.start()
    monkeypatch.setenv(DEADLINE_ENV, str(DEADLINE))
    monkeypatch.setenv("HIMGA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HIMGA_DATA_DIR", raising=False)
    try:
        yield service.base_url
    finally:
        service.stop()


@pytest.mark.parametrize("drips", ["/body", "/head"])
@pytest.mark.parametrize("dataset", ["locomo", "locomo-plus"])
def test_a_dripping_server_fails_the_download_at_the_deadline(
    dripping: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, drips: str, dataset: str
) -> None:
    variable = "HIMGA_LOCOMO_URL" if dataset == "locomo" else "HIMGA_LOCOMO_PLUS_URL"
    monkeypatch.setenv(variable, dripping + drips)
    started = time.monotonic()
    with pytest.raises(
        (DatasetNotFoundError, DownloadError), match=r"did not finish within 0\.6 s"
    ):
        resolve_dataset(dataset, show_progress=False)
    assert time.monotonic() - started < DEADLINE + 1.5
    assert not any((tmp_path / "cache").rglob("*.part"))


def test_a_dripping_server_fails_the_beam_download_at_the_deadline(
    dripping: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HIMGA_BEAM_URL", dripping)
    started = time.monotonic()
    with pytest.raises(DownloadError, match=r"did not finish within 0\.6 s"):
        BeamBenchmark("100K").download(tmp_path / "beam", show_progress=False)
    assert time.monotonic() - started < DEADLINE + 1.5
    assert not (tmp_path / "beam").exists()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("30", 30.0), ("0", DEFAULT_DEADLINE), ("-1", DEFAULT_DEADLINE), ("inf", DEFAULT_DEADLINE),
     ("soon", DEFAULT_DEADLINE), ("", DEFAULT_DEADLINE)],
)  # fmt: skip
def test_the_deadline_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, seconds: float
) -> None:
    monkeypatch.setenv(DEADLINE_ENV, value)
    assert download_deadline() == seconds

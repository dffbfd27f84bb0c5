"""Download of a BEAM tier: the repository's files at the pinned commit, each verified."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from himga.benchmarks.beam._manifest import COMMIT, REPOSITORY
from himga.data._download import _fetch
from himga.data._errors import ChecksumMismatchError, DownloadError

__all__ = ["BASE_URL", "URL_ENV", "download_tier", "git_blob_id"]

#: Where the files are fetched from: ``<base>/chats/<tier>/<path>``.
BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}"
#: Overrides :data:`BASE_URL` (a mirror of the repository, or a test server).
URL_ENV = "HIMGA_BEAM_URL"

_BLOCK = 1 << 20


def git_blob_id(path: Path) -> str:
    """The id git gives ``path``'s content: SHA-1 of ``"blob <size>\\0"`` + content."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def download_tier(
    files: Sequence[tuple[str, str, str | None]],
    url: str,
    dest: Path,
    *,
    show_progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Download ``files`` (path in the tier, git blob id, SHA-256 or ``None``) into ``dest``.

    Each file is fetched from ``<url>/<path>`` and must have its git blob id (and
    its SHA-256 where pinned), else :class:`ChecksumMismatchError`; a failed
    transfer raises :class:`DownloadError`. Files are gathered in a hidden
    sibling folder that becomes ``dest`` only once all are verified, so
    ``dest`` is either absent or complete; on any failure nothing is left
    behind, not even the directories created for it. Returns ``dest``.
    """
    if dest.exists():
        raise DownloadError(f"{dest} exists already; move it away to download the tier again")
    created = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part"))
    try:
        for name, blob_id, sha256 in files:
            _download_one(f"{url}/{name}", staging / name, blob_id, sha256, show_progress, timeout)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for directory in created:
            try:
                directory.rmdir()
            except OSError:
                break
        raise
    return dest


def _download_one(
    url: str, target: Path, blob_id: str, sha256: str | None, show_progress: bool, timeout: float
) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with target.open("wb") as out:
        received, expected = _fetch(url, out, digest, target.name, show_progress, timeout)
    if expected is not None and received != expected:
        raise DownloadError(f"{url}: connection closed after {received} of {expected} bytes")
    actual = git_blob_id(target)
    if actual != blob_id:
        raise ChecksumMismatchError(
            url, f"git blob id is {actual}, expected {blob_id}; the download was discarded"
        )
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ChecksumMismatchError(
            url, f"sha256 is {digest.hexdigest()}, expected {sha256}; the download was discarded"
        )

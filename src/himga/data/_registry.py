"""``DatasetSpec``: a dataset published as one file, what a benchmark calls to find,
download and describe its copy."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from himga.data._download import download_file

__all__ = ["DatasetSpec"]


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset published as one official file.

    ``files`` are the names a local copy may have, in order of preference;
    ``directories`` the sub-directories of a data directory searched for them,
    in order (the data directory itself is searched last). ``url`` is the
    official download, saved as ``download_name``; ``sha256`` pins its content,
    ``None`` when it could not be verified when himga was written (then only the
    file's shape is checked, and a warning says so).
    """

    name: str
    description: str
    files: tuple[str, ...]
    url: str
    download_name: str
    sha256: str | None
    license: str
    directories: tuple[str, ...] = ()

    @property
    def url_env(self) -> str:
        """The environment variable that overrides ``url`` (a mirror, or a test server)."""
        return f"HIMGA_{self.name.upper()}_URL"

    def locate(self, directory: Path) -> Path | None:
        """The first of ``files`` in ``directory/<d>`` for ``d`` in ``directories``, then
        in ``directory`` itself; ``None`` when there is none."""
        for place in (*(directory / d for d in self.directories), directory):
            for name in self.files:
                if (place / name).is_file():
                    return place / name
        return None

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """The official file (``$HIMGA_<NAME>_URL`` overrides the URL), verified, saved
        as ``cache/<download_name>``; see :func:`himga.data._download.download_file`."""
        url = os.environ.get(self.url_env) or self.url
        destination = cache / self.download_name
        return download_file(url, destination, sha256=self.sha256, show_progress=show_progress)

    def guidance(self, cache: Path) -> str:
        """What to download and where to save it."""
        checksum = f" (sha256 {self.sha256})" if self.sha256 else ""
        return (
            f"download {self.url}{checksum} and save it as "
            f"$HIMGA_DATA_DIR/{self.name}/{self.download_name} "
            f"or {cache / self.download_name}, or pass path=..."
        )

"""The viewer's one HTML page: the packaged CSS and JS inlined, the data embedded or fetched."""

from __future__ import annotations

import html
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from himga.runs._files import write_text_atomic
from himga.view._data import PAGE, ViewData

__all__ = ["CHUNK", "page", "to_json", "write_html"]

#: Questions' records per embedded element of the single file: showing one question
#: parses its element alone, not a whole run's contexts.
CHUNK = 256


def to_json(document: Any) -> str:
    """``document`` as compact JSON (``ValueError`` on a NaN: JSON has none)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _asset(name: str) -> str:
    return resources.files("himga.view").joinpath("_static").joinpath(name).read_text("utf-8")


def _script(element_id: str, document: Any) -> str:
    # "<" escaped, so no text of a run can close the element (</script>) early.
    text = to_json(document).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def page(data: ViewData | None) -> str:
    """The page: with ``data``, a self-contained file holding every document of it (the
    questions' records in elements of :data:`CHUNK`, each parsed only when one of its
    questions is shown); without, the page a server hands out, which fetches its
    documents from that server (and so needs no run read to be served)."""
    boot = {"mode": "served" if data is None else "static", "chunk": CHUNK, "page": PAGE}
    blocks = [_script("himga-boot", boot)]
    title = "himga view"
    if data is not None:
        blocks.append(_script("himga-runs", data.leaderboard(measure=True)))
        for i in range(len(data)):
            run = data.run(i)
            blocks.append(_script(f"himga-index-{i}", data.index(i)))
            for chunk in range(0, len(run.results), CHUNK):
                end = min(chunk + CHUNK, len(run.results))
                details = [data.question(i, n) for n in range(chunk, end)]
                blocks.append(_script(f"himga-details-{i}-{chunk // CHUNK}", details))
        title = ", ".join(f"{head.label} on {head.dataset_name}" for head in data.heads)
    return (
        _asset("page.html")
        .replace("/*CSS*/", _asset("viewer.css"))
        .replace("/*TITLE*/", html.escape(title))
        .replace("<!--DATA-->", "\n".join(blocks))
        .replace("/*JS*/", _asset("viewer.js"))
    )


def write_html(data: ViewData, file: str | os.PathLike[str]) -> Path:
    """Write the self-contained page of ``data`` (every document embedded) to ``file``,
    atomically; its path. It opens from disk, offline, in any browser."""
    path = Path(file)
    write_text_atomic(path, page(data))
    return path

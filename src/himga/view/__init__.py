"""``himga view``: a local, offline web viewer of runs (leaderboard, questions, diffs).

:class:`ViewData` turns runs read by :func:`himga.runs.load_run` (finished or partial)
into the JSON documents the page shows; :class:`ViewServer` serves the page and those
documents on a loopback port; :func:`write_html` writes one self-contained HTML file
instead. The page is plain JavaScript and CSS shipped in the package: nothing is
fetched from anywhere else (its Content-Security-Policy forbids it).
"""

from himga.view._data import OUTCOMES, PAGE, ViewData, evidence_spans, outcome, percentile
from himga.view._page import write_html
from himga.view._server import ViewServer

__all__ = [
    "OUTCOMES",
    "PAGE",
    "ViewData",
    "ViewServer",
    "evidence_spans",
    "outcome",
    "percentile",
    "write_html",
]

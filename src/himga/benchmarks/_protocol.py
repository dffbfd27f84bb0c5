"""What a benchmark is to himga: the :class:`Benchmark` and :class:`Judge` protocols.

Names as in the session design (design.md §3), with these refinements:

* every data member (``name``, ..., ``metrics``; ``Judge.prompts``) is declared as a
  read-only property: a plain or class attribute, a frozen dataclass field or a
  property all satisfy it;
* ``Benchmark.guidance(cache)`` -- the sentence an error prints when no copy is found
  (what to download, where to save it); ``download`` and ``guidance`` get the
  benchmark's own cache directory (``himga.data.cache_dir() / name``).
* ``Benchmark.locate(directory)`` is asked of a directory that *holds datasets*
  (an explicit ``path=``, ``$HIMGA_DATA_DIR``, the cache): the copy may be in it or
  in a sub-directory (by convention one named after the benchmark).
* ``Benchmark.metrics``: metrics of its own (:class:`himga.eval.Metric`,
  :class:`himga.eval.RunMetric`), added to the built-in ones for its results; one
  with a built-in's name replaces it for them. ``()`` when it has none.

This module imports nothing of himga at run time (the annotations are only read by
type checkers), so :mod:`himga.data` and :mod:`himga.eval` can depend on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from himga._errors import HimgaError
from himga._json import JSONValue

if TYPE_CHECKING:
    from himga.data.schema import Sample
    from himga.scoring._metric import Metric, RunMetric
    from himga.scoring._result import EvalResult

__all__ = ["Benchmark", "JSONValue", "Judge", "JudgeRequest", "UnjudgeableError"]


class UnjudgeableError(HimgaError, ValueError):
    """The judge's reply names no verdict, or more than one."""


@dataclass(frozen=True)
class JudgeRequest:
    """One call to the judge model.

    ``prompt`` names the template of :attr:`Judge.prompts` it was filled from (its
    hash goes into the run identity); ``text`` is the filled prompt, sent as the
    only user message; ``max_tokens`` bounds the reply.
    """

    prompt: str
    text: str
    max_tokens: int


@runtime_checkable
class Judge(Protocol):
    """How a benchmark's answers are judged by an LLM.

    The generic batch judge (:func:`himga.eval.batch_judge`) asks every request of
    every answered result, caches the *parsed* reply per (provider, model, request
    text), and scores the result from the parsed replies of its requests.
    """

    @property
    def prompts(self) -> Mapping[str, str]:
        """Every template by name. Names are global across benchmarks (prefix them with
        the benchmark's name); the same name must always mean the same text."""
        ...

    def requests(self, result: EvalResult) -> Sequence[JudgeRequest]:
        """The calls that judge ``result`` (``result.prediction`` is a ``str`` here)."""
        ...

    def parse(self, request: JudgeRequest, reply: str) -> JSONValue:
        """The verdict in the model's ``reply`` to ``request``, JSON-ready (it is cached).

        Raises :class:`UnjudgeableError` when the reply holds no usable verdict.
        """
        ...

    def score(self, result: EvalResult, parsed: Sequence[JSONValue]) -> float:
        """The question's judge score from the parsed replies, in the order of
        :meth:`requests`; 1.0 is fully right."""
        ...

    def offline_reply(self, text: str) -> str | None:
        """The reply a model judging as asked would give to the request whose filled
        prompt is ``text``, its verdict decided without a model (e.g. by word overlap
        of answer and gold, both in ``text``); ``None`` when ``text`` is none of this
        judge's requests.

        The loopback fake LLM (``himga fake-llm``) answers judge requests with it, so
        the offline path judges every benchmark; :meth:`parse` must accept the reply.
        Only ``text`` may decide it: the verdict never copies prompt text.
        """
        ...


@runtime_checkable
class Benchmark(Protocol):
    """Everything himga knows of one benchmark (or one split / tier of it).

    Registered under the entry-point group ``himga.benchmarks`` or with
    :func:`himga.benchmarks.register_benchmark`; looked up by :attr:`name`.
    Every question category it produces is a plain ``str``.
    """

    # Read-only properties, so a plain attribute, a class attribute, a frozen
    # dataclass field or a property all implement them.
    @property
    def name(self) -> str:
        """What ``--dataset`` takes and ``Sample.dataset`` holds, e.g. ``"locomo"``.
        A dataset derived from it is named ``"<name>+<variant>"`` and keeps its rules."""
        ...

    @property
    def description(self) -> str:
        """One line for ``himga datasets``."""
        ...

    @property
    def license(self) -> str:
        """The data's license, e.g. ``"CC BY-NC 4.0"``."""
        ...

    @property
    def categories(self) -> Sequence[str]:
        """Its question categories, in report order (others found in a run follow)."""
        ...

    @property
    def headline_excludes(self) -> frozenset[str]:
        """Categories left out of the headline ``"overall"`` block (LoCoMo: adversarial)."""
        ...

    @property
    def judge(self) -> Judge | None:
        """Its answer judge; ``None``: none (only the offline metrics apply)."""
        ...

    @property
    def metrics(self) -> Sequence[Metric | RunMetric]:
        """Metrics of its own, added to (or, by name, replacing) the built-in ones for
        its results; ``()`` for none."""
        ...

    def locate(self, directory: Path) -> Path | None:
        """Its copy in ``directory`` (a directory that holds datasets), or ``None``.

        What it returns is what :meth:`load` reads: a file or a directory.
        """
        ...

    def download(self, cache: Path, *, show_progress: bool) -> Path:
        """Fetch the official files into ``cache`` (its own directory), verified
        (sha256-pinned where possible), and return what :meth:`load` reads.

        Raises :class:`himga.data.DownloadError` when the transfer fails and
        :class:`himga.data.ChecksumMismatchError` when the content is not the pinned one;
        nothing is left behind then.
        """
        ...

    def guidance(self, cache: Path) -> str:
        """What to download and where to save it, for the error that says no copy
        was found (``cache`` as for :meth:`download`)."""
        ...

    def load(self, path: Path, wanted: frozenset[str] | None) -> Iterator[Sample]:
        """The samples of its copy at ``path``, in file order, as they are read.

        With ``wanted``, only those sample ids need be yielded (others may be
        skipped unread). Malformed data raises :class:`himga.data.DatasetError`
        naming file, sample and field; a quirk that is repaired warns a
        :class:`himga.data.DatasetWarning`.
        """
        ...

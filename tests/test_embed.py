"""himga.embed: the protocol, the hashing embedder, the spec factory."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from himga.embed import Embedder, HashEmbedder, UnknownEmbedderError, get_embedder


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

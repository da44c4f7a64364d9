"""Call recordings for tests: audio captured and encoded the way a call does it."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from sessions.models import Call, CallRecording
from sessions.realtime.recording import RATE, CallAudioCapture
from sessions.recordings import call_recording_encode, spool_path


def pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def record_audio(
    call: Call,
    *,
    caller: np.ndarray,
    agent: np.ndarray,
    at_s: float,
    agent_item: str = "item_reply",
) -> CallRecording:
    """A recording of `call`: `caller` (float, 24 kHz) from 0 s, `agent` (the reply
    `agent_item`) from `at_s`, captured in 40 ms chunks as they would arrive, then encoded."""
    capture = CallAudioCapture(spool_path(str(call.pk)), max_seconds=600)
    step = RATE // 25
    for n, i in enumerate(range(0, len(caller), step)):
        capture.caller_audio(pcm16(caller[i : i + step]), RATE, 1, at_s=n * 0.04)
    for n, i in enumerate(range(0, len(agent), step)):
        capture.agent_audio(agent_item, pcm16(agent[i : i + step]), RATE, at_s=at_s + n * 0.04)
    captured = capture.close(at_s=at_s + len(agent) / RATE)
    assert captured is not None
    recording = call_recording_encode(
        call_id=str(call.pk),
        spool=str(captured.path),
        rate=captured.rate,
        channels=captured.channels,
        marks=captured.marks,
    )
    assert recording is not None
    return recording


def decode(path: str | Path) -> tuple[str, int, np.ndarray]:
    """An audio file's codec, rate and samples as float (samples, channels)."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        codec, rate = stream.codec_context.name, stream.codec_context.sample_rate
        blocks = []
        for frame in container.decode(stream):
            data = frame.to_ndarray()  # planar (channels, n) for fltp
            blocks.append(data.T if frame.format.is_planar else data.reshape(-1, 2))
    return codec, rate, np.concatenate(blocks).astype(np.float32)

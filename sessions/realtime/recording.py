"""Both sides of a call as audio, on the call's clock, spooled to a file as it runs.

`CallAudioCapture` keeps two tracks, the caller (left) and the agent (right),
at `RATE`. A chunk plays from the moment it reaches the server, or right after
the chunk before it when that one is still playing: the model of a client's
player. The agent's audio is released at most `playback_lead_ms` ahead of the
clock, so its track runs a little ahead of now; a barge-in or a hang-up cuts it
there, dropping what the caller never heard (`cut_agent`). Everything before
now is final and goes to the spool file as interleaved PCM16 stereo every half
second: per chunk the work is a few numpy calls, never per sample. The file is
bounded by `max_seconds`; audio past it is dropped.

Plain Python and numpy: the session hands it audio and times, the runner
decides where the file lives and what becomes of it (sessions/recordings.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from voiceapp.engine.audio import StreamResampler, pcm16_to_float

log = logging.getLogger(__name__)

RATE = 24000  # per channel: the WebSocket's own rate; Opus takes it as is
CHANNELS = 2  # left: the caller, right: the agent
FLUSH_SAMPLES = RATE // 2  # write to the spool every half second of call time
# A chunk that arrives up to this late after the one before it ended continues it
# (network jitter); later than that, the gap is silence.
JITTER_SAMPLES = RATE // 10
MAX_AHEAD_SAMPLES = 30 * RATE  # audio queued ahead of the clock (a client sending too fast)


class _Track:
    """One side of the call: placed chunks not yet written, as (start sample, int16)."""

    def __init__(self) -> None:
        self.segments: list[tuple[int, np.ndarray]] = []
        self.end = 0  # the sample after the last placed one
        self.received = 0  # samples placed so far, gaps not counted (the input's own clock)
        # (received, position) where a gap broke the continuity: maps input time to call time
        self.anchors: list[tuple[int, int]] = [(0, 0)]

    def place(self, samples: np.ndarray, at: int, *, floor: int, limit: int) -> int | None:
        """Place `samples` arriving at sample `at`, not before `floor` (already written);
        their start, or None when dropped."""
        start = max(self.end if at - self.end <= JITTER_SAMPLES else at, floor)
        if start - at > MAX_AHEAD_SAMPLES or start >= limit:
            return None
        if start != self.end and len(self.anchors) < 10_000:
            self.anchors.append((self.received, start))
        samples = samples[: limit - start]
        self.segments.append((start, samples))
        self.end = start + len(samples)
        self.received += len(samples)
        return start

    def position_of(self, received: int) -> int:
        """Where the `received`-th input sample was placed on the call's clock."""
        base, pos = self.anchors[0]
        for r, p in self.anchors:
            if r > received:
                break
            base, pos = r, p
        return pos + received - base

    def cut(self, at: int) -> None:
        """Drop what was placed at or after sample `at`."""
        kept = []
        for start, samples in self.segments:
            if start < at:
                kept.append((start, samples[: at - start]))
        self.segments = kept
        self.end = min(self.end, max(at, 0))

    def take(self, begin: int, end: int) -> np.ndarray:
        """Samples `begin`..`end` (silence where nothing was placed); they leave the track."""
        out = np.zeros(end - begin, dtype=np.int16)
        kept = []
        for start, samples in self.segments:
            stop = start + len(samples)
            lo, hi = max(start, begin), min(stop, end)
            if lo < hi:
                out[lo - begin : hi - begin] = samples[lo - start : hi - start]
            if stop > end:
                kept.append((max(start, end), samples[max(0, end - start) :]))
        self.segments = kept
        return out


@dataclass(frozen=True)
class CaptureResult:
    """A finished capture: the spool file (PCM16 stereo at `rate`) and what it holds."""

    path: Path
    rate: int
    channels: int
    seconds: float
    marks: dict[str, float] = field(default_factory=dict)  # item id -> second it starts


class CallAudioCapture:
    """The caller and the agent of one call, spooled to `path` as it runs."""

    def __init__(self, path: Path, *, max_seconds: float) -> None:
        self.path = path
        self._file: BinaryIO | None = path.open("wb")
        self.limit = int(max_seconds * RATE)
        self.written = 0
        self.caller = _Track()
        self.agent = _Track()
        self.marks: dict[str, float] = {}
        self._resamplers: dict[str, StreamResampler] = {}

    def _samples(self, side: str, pcm: bytes, sample_rate: int, channels: int) -> np.ndarray:
        if sample_rate == RATE and channels == 1:
            return np.frombuffer(pcm, dtype="<i2")
        resampler = self._resamplers.get(side)
        if resampler is None or resampler.in_rate != sample_rate:
            resampler = self._resamplers[side] = StreamResampler(sample_rate, RATE)
        mono = resampler.process(pcm16_to_float(pcm, channels))
        return (np.clip(mono, -1.0, 1.0) * 32767.0).astype(np.int16)

    def caller_audio(self, pcm: bytes, sample_rate: int, channels: int, at_s: float) -> None:
        """Microphone audio (PCM16, interleaved when stereo) that arrived at `at_s`."""
        if self._file is None:
            return
        samples = self._samples("caller", pcm, sample_rate, channels)
        self.caller.place(samples, int(at_s * RATE), floor=self.written, limit=self.limit)
        self._flush(at_s)

    def agent_audio(self, item_id: str, pcm: bytes, sample_rate: int, at_s: float) -> None:
        """Reply audio (PCM16 mono) sent to the caller at `at_s`, for the item `item_id`."""
        if self._file is None:
            return
        samples = self._samples("agent", pcm, sample_rate, 1)
        start = self.agent.place(samples, int(at_s * RATE), floor=self.written, limit=self.limit)
        if start is not None:
            self.marks.setdefault(item_id, round(start / RATE, 3))
        self._flush(at_s)

    def caller_speech(self, item_id: str, audio_start_ms: int) -> None:
        """The caller's turn `item_id` began `audio_start_ms` into the input audio."""
        received = int(audio_start_ms * RATE / 1000)
        self.marks.setdefault(item_id, round(self.caller.position_of(received) / RATE, 3))

    def cut_agent(self, at_s: float) -> None:
        """The caller's player dropped what was queued: the agent's track ends at `at_s`."""
        self.agent.cut(max(int(at_s * RATE), self.written))

    def _flush(self, at_s: float, *, force: bool = False) -> None:
        end = min(int(at_s * RATE), self.limit)
        if end - self.written < (1 if force else FLUSH_SAMPLES) or self._file is None:
            return
        left = self.caller.take(self.written, end)
        right = self.agent.take(self.written, end)
        self._file.write(np.column_stack((left, right)).astype("<i2").tobytes())
        self.written = end

    def close(self, at_s: float) -> CaptureResult | None:
        """End the capture at `at_s` (the hang-up cuts the agent there); None if empty."""
        if self._file is None:
            return None
        self.cut_agent(at_s)
        self._flush(max(at_s, self.caller.end / RATE), force=True)
        self._file.close()
        self._file = None
        if self.written == 0:
            self.path.unlink(missing_ok=True)
            return None
        return CaptureResult(
            path=self.path,
            rate=RATE,
            channels=CHANNELS,
            seconds=round(self.written / RATE, 3),
            marks=dict(self.marks),
        )

    def discard(self) -> None:
        """Drop the capture and its file (the call failed to start)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self.path.unlink(missing_ok=True)

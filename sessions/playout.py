"""The agent's audio waiting to go out on a media transport (WebRTC's track, a
phone call's RTP): resampled to the transport's rate as it is queued, taken one
frame at a time, padded with silence when the agent says nothing.

`FrameClock` paces the taking: one frame per frame time against the monotonic
clock, re-anchored (not bursting the backlog) when the event loop stalled."""

from __future__ import annotations

import asyncio
import logging
import time

from voiceapp.engine.audio import StreamResampler, float_to_pcm16, pcm16_to_float

log = logging.getLogger(__name__)


class AudioQueue:
    """PCM16 mono at `rate`. `write()` takes any rate; `clear()` drops all (barge-in)."""

    def __init__(self, rate: int, *, max_buffer_ms: int = 10_000) -> None:
        self.rate = rate
        self._buffer = bytearray()
        self._max_bytes = max_buffer_ms * rate // 1000 * 2
        self._resampler: StreamResampler | None = None
        self._empty = asyncio.Event()
        self._empty.set()
        self.frames_taken = 0
        self.audio_frames_taken = 0  # frames that carried agent audio

    @property
    def buffered_ms(self) -> int:
        return len(self._buffer) * 1000 // (self.rate * 2)

    def write(self, pcm: bytes, sample_rate: int) -> None:
        """Queue PCM16 mono audio at `sample_rate`."""
        if sample_rate == self.rate:
            self._buffer += pcm
        else:
            if self._resampler is None or self._resampler.in_rate != sample_rate:
                self._resampler = StreamResampler(sample_rate, self.rate)
            self._buffer += float_to_pcm16(self._resampler.process(pcm16_to_float(pcm)))
        if self._buffer:
            self._empty.clear()
        overflow = len(self._buffer) - self._max_bytes
        if overflow > 0:  # only when the session outruns real time by seconds
            log.warning("output audio buffer full: dropping %d ms", overflow * 500 // self.rate)
            del self._buffer[:overflow]

    def clear(self) -> None:
        """Drop queued audio now (barge-in)."""
        self._buffer.clear()
        self._resampler = None
        self._empty.set()

    async def drained(self) -> None:
        """Wait until every queued frame was taken."""
        await self._empty.wait()

    def take(self, samples: int) -> bytes:
        """The next frame of `samples`, silence-padded."""
        size = samples * 2
        chunk = bytes(self._buffer[:size])
        del self._buffer[:size]
        if chunk:
            self.audio_frames_taken += 1
        if not self._buffer:
            self._empty.set()
        self.frames_taken += 1
        return chunk + bytes(size - len(chunk))


class FrameClock:
    """Waits out each frame's slot: frame n is due `n * frame_s` after the first."""

    def __init__(self, frame_s: float) -> None:
        self.frame_s = frame_s
        self._start: float | None = None
        self.frames = 0

    async def tick(self) -> None:
        """Wait until the next frame is due (the first is due at once)."""
        now = time.monotonic()
        if self._start is None:
            self._start = now
            return
        self.frames += 1
        wait = self._start + self.frames * self.frame_s - now
        if wait > 0:
            await asyncio.sleep(wait)
        elif wait < -0.2:  # the loop stalled: do not burst the backlog, re-anchor
            self._start = now - self.frames * self.frame_s

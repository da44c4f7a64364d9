"""A phone call's media: RTP in and out through aiortp, and the transport the
realtime session talks to.

Caller audio arrives as G.711 (PCMU or PCMA) at 8 kHz; aiortp's jitter buffer
puts packets back in order and conceals a lost one, and the decoded PCM16
goes to the session. Agent audio comes from the session at the engine's rate,
is resampled to 8 kHz and sent as one 20 ms packet per 20 ms against the
clock (silence when the agent says nothing, so the far end's jitter buffer
and any NAT on the way keep the stream). RFC 4733 digits are collected and
handed on as one keypad entry after `DIGIT_GAP_S` without a new digit, or at
"#"."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiosipua import CallSession

from sessions.playout import AudioQueue, FrameClock

log = logging.getLogger(__name__)

RATE = 8000
FRAME_MS = 20
FRAME_SAMPLES = RATE * FRAME_MS // 1000
DIGIT_GAP_S = 1.5
MAX_DIGITS = 32
MAX_BUFFER_MS = 10_000


class PhoneAudioOut:
    """Agent audio, paced out as 20 ms RTP packets (silence when it says nothing)."""

    def __init__(self, rtp: CallSession) -> None:
        self._rtp = rtp
        self.queue = AudioQueue(RATE, max_buffer_ms=MAX_BUFFER_MS)

    @property
    def packets_sent(self) -> int:
        return self.queue.frames_taken

    @property
    def audio_packets_sent(self) -> int:
        return self.queue.audio_frames_taken

    def write(self, pcm: bytes, sample_rate: int) -> None:
        self.queue.write(pcm, sample_rate)

    def clear(self) -> None:
        self.queue.clear()

    async def drained(self) -> None:
        await self.queue.drained()

    async def run(self) -> None:
        clock = FrameClock(FRAME_MS / 1000)
        while True:
            await clock.tick()
            timestamp = (clock.frames * FRAME_SAMPLES) & 0xFFFFFFFF
            self._rtp.send_audio_pcm(self.queue.take(FRAME_SAMPLES), timestamp)


class DigitCollector:
    """RFC 4733 digits into keypad entries: "1", "42#" -> "42"."""

    def __init__(self, deliver: Callable[[str], Awaitable[None]]) -> None:
        self._deliver = deliver
        self._digits: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def press(self, digit: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if digit == "#":
            self.flush()
            return
        if len(self._digits) < MAX_DIGITS:
            self._digits.append(digit)
        self._timer = asyncio.get_running_loop().call_later(DIGIT_GAP_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._digits:
            return
        entry, self._digits = "".join(self._digits), []
        task = asyncio.ensure_future(self._deliver(entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in self._tasks:
            task.cancel()


class PhoneTransport:
    """What `RealtimeSession` sends through: events are only logged (a phone
    has no screen), audio goes to the RTP stream, and a close hangs up."""

    name = "sip"
    audio_as_events = False

    def __init__(
        self,
        output: PhoneAudioOut,
        on_close: Callable[[str], Awaitable[None]],
        on_handoff: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.output = output
        self._on_close = on_close
        self._on_handoff = on_handoff
        self.close_reason: str | None = None
        self.events: dict[str, int] = {}
        self.last_latency: dict[str, Any] | None = None
        self.replied = asyncio.Event()  # a response.done was sent

    async def send_event(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", ""))
        self.events[kind] = self.events.get(kind, 0) + 1
        if kind == "error":
            log.info("phone call: %s", event.get("error"))
        elif kind == "response.done":
            self.replied.set()
            response = event.get("response", {})
            if response.get("latency"):
                self.last_latency = response["latency"]
            if response.get("handoff") and self._on_handoff is not None:
                self._on_handoff(response["handoff"])

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None:
        self.output.write(pcm, sample_rate)

    def flush_audio(self) -> None:
        self.output.clear()

    async def close(self, code: int, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = reason
        await self._on_close(reason)

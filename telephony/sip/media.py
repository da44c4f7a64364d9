"""A phone call's media: RTP in and out through aiortp, and the transport the
realtime session talks to.

Caller audio arrives as G.711 (PCMU or PCMA) at 8 kHz, G.722 at 16 kHz or
Opus at 48 kHz; aiortp's jitter buffer puts packets back in order and conceals a lost one, and
the decoded PCM16 goes to the session. Agent audio comes from the session at
the engine's rate, is resampled to the codec's rate and sent as one 20 ms
packet per 20 ms against the
clock (silence when the agent says nothing, so the far end's jitter buffer
and any NAT on the way keep the stream). RFC 4733 digits are collected and
handed on as one keypad entry after `DIGIT_GAP_S` without a new digit, or at
"#". Digits the agent presses (`KeyTones`) go out as RFC 4733 events in place
of audio frames."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from aiortp.dtmf import DTMF_EVENTS, DtmfEvent
from aiosipua import CallSession

from sessions.playout import AudioQueue, FrameClock

log = logging.getLogger(__name__)

RATE = 8000  # G.711's sample rate, and the RTP clock of G.711 and G.722
FRAME_MS = 20
FRAME_SAMPLES = RATE * FRAME_MS // 1000
DIGIT_GAP_S = 1.5
MAX_DIGITS = 32
MAX_BUFFER_MS = 10_000
KEY_MS = 160  # how long the agent holds each key
KEY_GAP_MS = 100  # between two keys
KEY_VOLUME = 10  # -dBm0, as telephones send


EventSend = Callable[[bytes, int, bool], None]  # (telephone-event payload, timestamp, marker)


class KeypadClosed(RuntimeError):
    pass


class KeyTones:
    """Keys the agent presses, sent as RFC 4733 telephone-events on the audio's
    clock. Each key takes the frames of `KEY_MS` in place of audio: one packet a
    frame, all with the timestamp of the frame it began on and the duration so
    far, the first marked; the last is sent three times with the end bit. Then
    `KEY_GAP_MS` of audio frames before the next key."""

    def __init__(self, send: EventSend, *, clock_per_frame: int = FRAME_SAMPLES) -> None:
        self._send = send
        self._step = clock_per_frame  # RTP clock units in one frame
        self._frames_per_key = KEY_MS // FRAME_MS
        self._gap_frames = KEY_GAP_MS // FRAME_MS
        self._waiting: deque[tuple[str, asyncio.Future[None]]] = deque()
        self._key: tuple[str, asyncio.Future[None]] | None = None
        self._start = 0
        self._frames = 0
        self._gap = 0
        self.sent = ""  # every key sent, in order

    async def press(self, digits: str) -> None:
        """Queue `digits` (0-9, *, #, A-D) and wait until the last has been sent."""
        keys = digits.upper()
        if any(k not in DTMF_EVENTS for k in keys):
            raise ValueError(f"not keys to press: {digits[:40]!r}")  # before any goes out
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] | None = None
        for digit in keys:
            done = loop.create_future()
            self._waiting.append((digit, done))
        if done is not None:
            await done

    def cancel(self) -> None:
        """The call ended: nothing more is sent; whoever waits is told (`KeypadClosed`)."""
        pending = list(self._waiting) + ([self._key] if self._key else [])
        self._waiting.clear()
        self._key = None
        for _, done in pending:
            if not done.done():
                done.set_exception(KeypadClosed("the call ended before the keys were sent"))

    def frame(self, timestamp: int) -> bool:
        """Send this frame's telephone-event packet, if a key is being pressed:
        True when the frame is the keypad's (no audio goes out in it)."""
        if self._gap:
            self._gap -= 1
            return False
        if self._key is None:
            if not self._waiting:
                return False
            self._key = self._waiting.popleft()
            self._start, self._frames = timestamp, 0
        digit, done = self._key
        event = DTMF_EVENTS[digit]
        self._frames += 1
        duration = self._frames * self._step
        if self._frames < self._frames_per_key:
            packet = DtmfEvent(event=event, end=False, volume=KEY_VOLUME, duration=duration)
            self._send(packet.serialize(), self._start, self._frames == 1)
            return True
        packet = DtmfEvent(event=event, end=True, volume=KEY_VOLUME, duration=duration)
        for _ in range(3):  # RFC 4733 2.5.1.4: the end, three times
            self._send(packet.serialize(), self._start, False)
        self.sent += digit
        self._key, self._gap = None, self._gap_frames
        if not done.done():
            done.set_result(None)
        return True


def rtp_event_sender(rtp: CallSession) -> EventSend:
    """Sends one telephone-event packet on the call's RTP stream. aiortp's own
    `send_dtmf` sends a whole key in one burst, on timestamp 0 unless told; its
    sender sends one packet with the stream's sequence numbers, which is what
    pacing the key needs."""
    payload_type = dtmf_payload_type(rtp)
    warned = False

    def send(payload: bytes, timestamp: int, marker: bool) -> None:
        nonlocal warned
        session = rtp.rtp_session
        if session is None:  # the stream closed under the key: say so (once), it is not heard
            if not warned:
                log.warning("a key's telephone-event was not sent: the call's RTP stream is closed")
                warned = True
            return
        session._sender.send_raw(
            payload_type, payload, timestamp, marker=int(marker), addr=session._remote_addr
        )

    return send


def dtmf_payload_type(rtp: CallSession) -> int:
    """The telephone-event payload type the call agreed on (101 if the answer has none)."""
    audio = rtp.sdp_answer.audio
    for codec in audio.codecs if audio is not None else []:
        if codec.encoding_name.lower() == "telephone-event":
            return codec.payload_type
    return 101


class PhoneAudioOut:
    """Agent audio, paced out as 20 ms RTP packets (silence when it says nothing),
    and the keys the agent presses (`keys`) in place of some frames."""

    def __init__(self, rtp: CallSession) -> None:
        """`rtp`: started, so its codec is known."""
        self._rtp = rtp
        self.rate = rtp.codec_sample_rate  # of the PCM in and out: 16 kHz for G.722
        self._frame_samples = self.rate * FRAME_MS // 1000
        self._clock_step = rtp.clock_rate * FRAME_MS // 1000  # RTP timestamp units a frame
        self.queue = AudioQueue(self.rate, max_buffer_ms=MAX_BUFFER_MS)
        self.keys = KeyTones(rtp_event_sender(rtp), clock_per_frame=self._clock_step)

    async def press(self, digits: str) -> None:
        """Press `digits` on the call's keypad (the session's `Keypad`)."""
        await self.keys.press(digits)

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
        try:
            while True:
                await clock.tick()
                timestamp = (clock.frames * self._clock_step) & 0xFFFFFFFF
                if not self.keys.frame(timestamp):
                    self._rtp.send_audio_pcm(self.queue.take(self._frame_samples), timestamp)
        finally:
            with contextlib.suppress(Exception):
                self.keys.cancel()


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

"""An aiortc caller for `/v1/realtime/calls`: a microphone track that plays queued
audio at real-time pace, the `oai-events` data channel, and the agent's track.

Used by the WebRTC tests (tests/sessions/test_webrtc.py) and the load generator
(bench/load.py). It imports nothing from Django: a process with the Django
settings installs `sessions.webrtc.install_loopback_filter()`, one without
calls `loopback_only()`, before its first offer.
"""

from __future__ import annotations

import asyncio
import fractions
import json
import time
from collections.abc import Callable
from typing import Any

import aioice.ice
import numpy as np
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

RATE = 48000
FRAME = 960  # 20 ms


def loopback_only() -> None:
    """Have this process's peers offer 127.0.0.1 host candidates only (as a server
    with WEBRTC_LOOPBACK_ONLY answers), so no time goes to other interfaces."""
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []


class MicTrack(MediaStreamTrack):
    """A microphone: 20 ms frames of 48 kHz stereo PCM16, silence unless `say()` queued audio."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queue = np.zeros(0, dtype=np.float32)
        self._start: float | None = None
        self._pts = 0
        self._mark: int | None = None  # samples of the queue left to send before the mark
        self.marked_at: float | None = None
        self.said = asyncio.Event()

    def say(self, samples: np.ndarray, mark_s: float | None = None) -> None:
        """Queue `samples`; with `mark_s`, `marked_at` becomes the time the frame holding
        that point of them was sent."""
        if mark_s is not None:
            self._mark = len(self._queue) + int(mark_s * RATE)
            self.marked_at = None
        self._queue = np.concatenate([self._queue, samples.astype(np.float32)])
        self.said.clear()

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.monotonic()
        else:
            self._pts += FRAME
            await asyncio.sleep(max(0.0, self._start + self._pts / RATE - time.monotonic()))
        piece = np.zeros(FRAME, dtype=np.float32)
        take = self._queue[:FRAME]
        piece[: len(take)] = take
        self._queue = self._queue[FRAME:]
        if self._mark is not None:
            self._mark -= len(take)
            if self._mark <= 0:
                self.marked_at = time.monotonic()
                self._mark = None
        if not len(self._queue):
            self.said.set()
        pcm = (np.clip(piece, -1, 1) * 32767).astype("<i2")
        frame = AudioFrame(format="s16", layout="stereo", samples=FRAME)
        frame.planes[0].update(np.repeat(pcm, 2).tobytes())
        frame.pts = self._pts
        frame.sample_rate = RATE
        frame.time_base = fractions.Fraction(1, RATE)
        return frame


class Client:
    """An aiortc caller: mic track, `oai-events` channel, and what it hears.

    Every frame of the agent's track goes to `on_frame`; by default it is kept in
    `heard`. A caller that runs for minutes overrides it to keep less."""

    def __init__(self) -> None:
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.mic = MicTrack()
        self.pc.addTrack(self.mic)
        self.channel = self.pc.createDataChannel("oai-events")
        self.events: list[dict[str, Any]] = []
        self._new_event = asyncio.Event()
        self.heard: list[tuple[float, np.ndarray]] = []  # (arrival, 48 kHz mono float)
        self._tasks: set[asyncio.Task[None]] = set()
        self.channel.on("message", self._on_message)
        self.pc.on("track", self._on_track)

    def _on_message(self, message: str | bytes) -> None:
        self.events.append(json.loads(message))
        self._new_event.set()

    def _on_track(self, track: MediaStreamTrack) -> None:
        task = asyncio.ensure_future(self._listen(track))
        self._tasks.add(task)

    async def _listen(self, track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            assert isinstance(frame, AudioFrame)
            self.on_frame(time.monotonic(), frame)

    def on_frame(self, arrival: float, frame: AudioFrame) -> None:
        pcm = frame.to_ndarray().reshape(-1, len(frame.layout.channels))
        self.heard.append((arrival, pcm.mean(axis=1) / 32768.0))

    async def offer(self) -> str:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return str(self.pc.localDescription.sdp)

    async def accept(self, answer: str) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))

    async def wait_for(
        self, match: Callable[[dict[str, Any]], bool], timeout_s: float = 60.0, start: int = 0
    ) -> tuple[int, dict[str, Any]]:
        """The first event from index `start` on that matches, and its index."""
        async with asyncio.timeout(timeout_s):
            while True:
                for i in range(start, len(self.events)):
                    if match(self.events[i]):
                        return i, self.events[i]
                start = len(self.events)
                self._new_event.clear()
                await self._new_event.wait()

    def audio_since(self, t0: float, t1: float) -> np.ndarray:
        pieces = [a for t, a in self.heard if t0 <= t <= t1]
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)

    async def close(self) -> None:
        await self.pc.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

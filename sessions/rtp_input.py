"""How long the caller's WebRTC audio waits on the server before the call hears it.

aiortc's receiver puts every RTP packet through a jitter buffer that hands a frame
on only once `prefetch` newer frames have arrived (4 for audio: 80 ms). Whatever
the prefetch, it waits for the next packet before it calls a frame complete, so
even its least setting holds every 20 ms frame 20 ms. That buffer is for playout;
here nobody plays the caller's audio: the call's VAD and ASR read it, and they need
the frames in order, not evenly spaced. So by default (`WEBRTC_INPUT_JITTER_FRAMES`
0) the receiver gets an `ArrivalBuffer`, which hands each packet on as it arrives
and drops one that comes after a newer one: 20 ms the decoder skips, where waiting
for it would have delayed every frame. 1 or more keeps aiortc's buffer with that
prefetch.
"""

from __future__ import annotations

import logging

from aiortc import RTCRtpReceiver
from aiortc.jitterbuffer import MAX_MISORDER, JitterBuffer, JitterFrame
from aiortc.rtp import RtpPacket
from aiortc.utils import uint16_add

log = logging.getLogger(__name__)

RECEIVER_BUFFER = "_RTCRtpReceiver__jitter_buffer"  # aiortc's private attribute


class ArrivalBuffer:
    """Audio frames handed on in arrival order, none held; late or repeated packets dropped.

    Has what aiortc's receiver uses of its jitter buffer: `add(packet)` returns
    `(picture loss, frame or None)`, and `capacity`.
    """

    capacity = 1

    def __init__(self) -> None:
        self._last: int | None = None  # sequence number of the newest packet handed on
        self.dropped = 0

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        sequence = packet.sequence_number
        if self._last is not None:
            behind = uint16_add(self._last, -sequence)
            # a repeat, or older than one already heard; further back than aiortc's
            # MAX_MISORDER is a restarted sequence, taken as new
            if behind < MAX_MISORDER:
                self.dropped += 1
                return False, None
        self._last = sequence
        data: bytes = packet._data  # type: ignore[attr-defined]  # the receiver depayloads into it
        return False, JitterFrame(data=data, timestamp=packet.timestamp)


def install_input_buffer(receiver: RTCRtpReceiver, frames: int) -> None:
    """Replace the receiver's jitter buffer before its first packet: `frames` 0 with an
    `ArrivalBuffer`, otherwise with aiortc's own holding `frames` (its default is 4).

    aiortc takes no option for it; `test_caller_audio_reaches_the_call_as_it_arrives`
    notices if it renames the attribute.
    """
    current = getattr(receiver, RECEIVER_BUFFER, None)
    if not isinstance(current, JitterBuffer):
        log.warning("aiortc's receiver has no jitter buffer where expected; leaving it")
        return
    buffer = ArrivalBuffer() if frames <= 0 else JitterBuffer(current.capacity, prefetch=frames)
    setattr(receiver, RECEIVER_BUFFER, buffer)

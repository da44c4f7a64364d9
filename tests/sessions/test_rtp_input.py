"""The caller's WebRTC audio on the server: each frame handed on as it arrives."""

from __future__ import annotations

import pytest
from aiortc import RTCPeerConnection
from aiortc.jitterbuffer import JitterBuffer
from aiortc.rtp import RtpPacket

from sessions.rtp_input import RECEIVER_BUFFER, ArrivalBuffer, install_input_buffer


def packet(sequence: int) -> RtpPacket:
    p = RtpPacket(payload_type=111, sequence_number=sequence % 65536, timestamp=960 * sequence)
    p._data = f"opus {sequence}".encode()  # type: ignore[attr-defined]  # as the receiver sets it
    return p


def first_frame_at(buffer: ArrivalBuffer | JitterBuffer) -> int:
    """The packet whose arrival hands on the first frame."""
    for n in range(8):
        _, frame = buffer.add(packet(n))
        if frame is not None:
            return n
    raise AssertionError("no frame handed on")


def test_each_frame_is_handed_on_with_its_own_packet_where_aiortc_waits_for_more() -> None:
    # given the arrival buffer and aiortc's own at its least (1) and default (4) prefetch
    buffers = {
        "arrival": ArrivalBuffer(),
        1: JitterBuffer(capacity=16, prefetch=1),
        4: JitterBuffer(capacity=16, prefetch=4),
    }
    # when packets arrive one every 20 ms
    # then the arrival buffer hands the first frame on when it arrives; aiortc's when
    # the next one (20 ms later) or four more (80 ms) have
    assert {name: first_frame_at(b) for name, b in buffers.items()} == {
        "arrival": 0,
        1: 1,
        4: 4,
    }


def test_frames_go_out_in_order_and_a_late_or_repeated_packet_is_dropped() -> None:
    # given an arrival buffer
    buffer = ArrivalBuffer()
    # when packets 0, 1, 3, 2 (late), 3 (again), 4 arrive
    handed = []
    for n in (0, 1, 3, 2, 3, 4):
        _, frame = buffer.add(packet(n))
        handed.append(None if frame is None else frame.data.decode())
    # then each newer one is handed on with its own payload and timestamp, the others not
    assert handed == ["opus 0", "opus 1", "opus 3", None, None, "opus 4"]
    assert buffer.dropped == 2


@pytest.mark.parametrize(
    ("first", "then", "handed"),
    [
        (65535, 0, True),  # the sequence number wraps
        (500, 10, True),  # far behind: the sender restarted its sequence
        (500, 450, False),  # 50 behind: a late packet
    ],
)
def test_sequence_numbers_wrap_and_restart(first: int, then: int, handed: bool) -> None:
    buffer = ArrivalBuffer()
    buffer.add(packet(first))
    _, frame = buffer.add(packet(then))
    assert (frame is not None) == handed


@pytest.mark.parametrize(("frames", "kind"), [(0, ArrivalBuffer), (1, JitterBuffer)])
async def test_the_setting_chooses_the_receivers_buffer(frames: int, kind: type) -> None:
    # given a peer's audio receiver with aiortc's own buffer (prefetch 4)
    peer = RTCPeerConnection()
    receiver = peer.addTransceiver("audio").receiver
    assert getattr(receiver, RECEIVER_BUFFER)._prefetch == 4
    # when the input buffer is installed with WEBRTC_INPUT_JITTER_FRAMES = frames
    install_input_buffer(receiver, frames)
    # then 0 hands frames on as they arrive and 1 or more keeps aiortc's with that prefetch
    buffer = getattr(receiver, RECEIVER_BUFFER)
    assert isinstance(buffer, kind)
    if isinstance(buffer, JitterBuffer):
        assert buffer._prefetch == frames
    await peer.close()

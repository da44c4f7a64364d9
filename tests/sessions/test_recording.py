"""The call's audio capture (sessions/realtime/recording.py): both sides on the
call's clock, what a barge-in or a hang-up cut away left out, bounded."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sessions.realtime.recording import RATE, CallAudioCapture


def tone(seconds: float, rate: int = RATE, hz: float = 440.0, level: float = 0.5) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * hz * t) * level * 32767).astype("<i2").tobytes()


def read_spool(path: Path) -> np.ndarray:
    """The spool as (samples, 2) float: left the caller, right the agent."""
    return np.frombuffer(path.read_bytes(), dtype="<i2").reshape(-1, 2).astype(np.float32) / 32768


def loud(channel: np.ndarray, start_s: float, end_s: float) -> bool:
    part = channel[int(start_s * RATE) : int(end_s * RATE)]
    return bool(part.size) and float(np.sqrt(np.mean(part**2))) > 0.1


def test_both_sides_land_on_the_call_clock(tmp_path: Path) -> None:
    # given a capture, the caller speaking 0-1 s in 40 ms chunks as they arrive
    capture = CallAudioCapture(tmp_path / "call.pcm", max_seconds=60)
    chunk = tone(0.04)
    for n in range(25):
        capture.caller_audio(chunk, RATE, 1, at_s=n * 0.04)
    # and the agent's reply sent at 2 s, at 22.05 kHz, ahead of the clock as the engine sends it
    capture.agent_audio("item_reply", tone(1.0, rate=22050, hz=220), 22050, at_s=2.0)

    # when the call hangs up at 4 s
    result = capture.close(at_s=4.0)

    # then the spool holds 4 s: the caller in 0-1 s on the left, the agent in 2-3 s on the right
    assert result is not None and result.seconds == 4.0
    audio = read_spool(result.path)
    left, right = audio[:, 0], audio[:, 1]
    assert loud(left, 0.05, 0.95) and not loud(left, 1.05, 4.0)
    assert loud(right, 2.05, 2.95) and not loud(right, 0.0, 1.95) and not loud(right, 3.05, 4.0)
    assert result.marks == {"item_reply": 2.0}


def test_barge_in_and_hang_up_cut_the_agent_where_the_caller_stopped_hearing(
    tmp_path: Path,
) -> None:
    # given the agent's audio released 3 s ahead of the clock at 1 s
    capture = CallAudioCapture(tmp_path / "call.pcm", max_seconds=60)
    capture.agent_audio("item_a", tone(3.0), RATE, at_s=1.0)

    # when the caller barges in at 2 s, the next reply goes out at 3 s and the call
    # hangs up at 3.5 s, halfway through it
    capture.cut_agent(at_s=2.0)
    capture.agent_audio("item_b", tone(2.0), RATE, at_s=3.0)
    result = capture.close(at_s=3.5)

    # then the agent is heard 1-2 s and 3-3.5 s only
    assert result is not None and result.seconds == 3.5
    right = read_spool(result.path)[:, 1]
    assert loud(right, 1.05, 1.95) and loud(right, 3.05, 3.45)
    assert not loud(right, 2.02, 2.98)
    assert result.marks == {"item_a": 1.0, "item_b": 3.0}


def test_a_caller_turn_is_marked_where_its_speech_began(tmp_path: Path) -> None:
    # given a caller whose audio started 0.5 s into the call and ran continuously
    capture = CallAudioCapture(tmp_path / "call.pcm", max_seconds=60)
    for n in range(50):
        capture.caller_audio(tone(0.04), RATE, 1, at_s=0.5 + n * 0.04)

    # when the engine says a turn began 1.2 s into the input audio
    capture.caller_speech("item_user", audio_start_ms=1200)

    # then the turn is marked 1.7 s into the call
    assert capture.marks["item_user"] == 1.7
    capture.discard()


def test_stereo_48k_input_is_mixed_down_and_the_file_is_bounded(tmp_path: Path) -> None:
    # given a capture bounded at 2 s and a WebRTC caller (48 kHz stereo) talking for 3 s
    capture = CallAudioCapture(tmp_path / "call.pcm", max_seconds=2)
    mono = np.frombuffer(tone(0.02, rate=48000), dtype="<i2")
    stereo = np.column_stack((mono, mono)).tobytes()
    for n in range(150):
        capture.caller_audio(stereo, 48000, 2, at_s=n * 0.02)

    # when the call ends at 3 s
    result = capture.close(at_s=3.0)

    # then 2 s were kept, all of them the caller's
    assert result is not None and result.seconds == 2.0
    assert result.path.stat().st_size == 2 * RATE * 2 * 2
    assert loud(read_spool(result.path)[:, 0], 0.1, 1.95)


def test_a_call_without_audio_leaves_no_file(tmp_path: Path) -> None:
    capture = CallAudioCapture(tmp_path / "call.pcm", max_seconds=60)

    result = capture.close(at_s=0.0)

    assert result is None and not (tmp_path / "call.pcm").exists()

"""`./dev bench browser` at CI size: the real topology, headless Chromium with a fake
microphone, one spoken question per transport. It checks that both transports are
answered audibly and that the figures are well formed, not how fast this machine is."""

from __future__ import annotations

import math
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.browser import parser, run, turns_from, write_mic_wav
from bench.questions import RATE, Question


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_one_question_per_transport_is_answered_audibly_and_timed() -> None:
    # given the widget in Chromium, when it asks one question over WebRTC, then one
    # over its WebSocket fallback
    report = await run(parser().parse_args(["--questions", "1", "--gap-s", "7"]))

    for transport in ("webrtc", "websocket"):
        r = report["transports"][transport]
        [one] = r["calls"]
        # then the widget used that transport, and the page played an answer
        assert one["widget"]["transports"] == [transport] and "error" not in one, one["console"]
        assert one["widget"]["output_peak"] > 0.02, one["widget"]
        assert not one["probe_errors"], one["probe_errors"]
        [turn] = one["turns"]
        assert turn["answered"] and not turn["reply_during_question"], turn
        assert "capital" in turn["transcript"].lower(), turn
        # and the turn is timed on the page's clock, beside the server's own span
        assert 0 < turn["client_v2v_ms"] < 10_000, turn
        assert positive(turn["server"]["v2v_ms"]), turn
        assert turn["overhead_ms"] == pytest.approx(
            turn["client_v2v_ms"] - turn["server"]["v2v_ms"], abs=0.2
        )
        assert r["summary"]["client_v2v_ms"]["n"] == 1
    # and WebRTC's figures include Chromium's jitter buffer
    jitter = report["transports"]["webrtc"]["calls"][0]["jitter"]
    assert positive(jitter["jitter_buffer_ms"]) and jitter["samples_emitted"] > 0, jitter
    assert isinstance(report["summary"]["webrtc_minus_websocket_p50_ms"], float)
    # and the server recorded both calls, with their turns, in its Postgres database
    assert report["config"]["database"] == "postgres"
    records = report["call_records"]
    # (the first is the warm-up call, over the widget's default transport)
    assert [r["transport"] for r in records] == ["webrtc", *report["config"]["order"]], records
    for record in records:
        assert record["source"] == "widget" and record["asr_seconds"] > 0, record
        assert any(t["status"] == "completed" for t in record["turns"]), record


def test_turns_pair_each_question_with_the_first_reply_after_it() -> None:
    # given what the page saw: a question in two runs (a short pause), a reply; a
    # second question with a blip of output during it, then its reply; a third unanswered
    probe = {
        "mic": [[1.0, 2.0], [2.5, 3.0], [10.0, 12.0], [20.0, 21.0]],
        "out": [[3.8, 6.0], [6.5, 7.0], [11.0, 11.1], [12.9, 14.0]],
        "clock": [[0.0, 1000.0, 0.0, 1000.0]],  # context time 0 s is page time 1000 ms
        "events": [
            {
                "t": 4200.0,
                "type": "conversation.item.input_audio_transcription.completed",
                "transcript": "one",
            },
            {"t": 4750.0, "type": "response.output_audio.delta"},
            {
                "t": 5000.0,
                "type": "response.done",
                "status": "completed",
                "latency": {"v2v_ms": 600.0, "endpoint_ms": 300.0},
            },
            {
                "t": 14000.0,
                "type": "response.done",
                "status": "cancelled",
                "latency": {"v2v_ms": 1.0},
            },
        ],
    }
    # when it is turned into turns
    first, second, third = turns_from(probe)
    # then the first question ends at 3.0 s and its reply starts 800 ms later,
    # 200 ms more than the server's span
    assert first["client_v2v_ms"] == pytest.approx(800.0)
    assert first["server"]["v2v_ms"] == 600.0 and first["overhead_ms"] == pytest.approx(200.0)
    assert first["transcript"] == "one" and first["first_delta_ms"] == pytest.approx(750.0)
    # and the second's reply is the one after it ends, the blip during it is flagged,
    # a cancelled response gives no server figures
    assert second["client_v2v_ms"] == pytest.approx(900.0) and second["reply_during_question"]
    assert second["server"] == {} and "overhead_ms" not in second
    # and the third was not answered
    assert not third["answered"] and third["client_v2v_ms"] is None


def test_the_microphone_file_is_dithered_48k_mono_pcm16(tmp_path: Path) -> None:
    # given a question of 0.5 s of tone
    tone = (0.3 * np.sin(np.arange(RATE // 2) * 2 * np.pi * 440 / RATE)).astype(np.float32)
    question = Question("tone", "test", "a tone", tone, 0.5, (0.5,))
    # when it is written with 1 s before and 2 s after
    mic = write_mic_wav(tmp_path / "mic.wav", [question], lead_s=1.0, gap_s=2.0)
    # then the file is 48 kHz mono PCM16 of 3.5 s, the question ending at 1.5 s
    with wave.open(str(mic.path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (48000, 1, 2)
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    assert len(pcm) == 3.5 * 48000 and mic.seconds == pytest.approx(3.5)
    assert mic.questions[0]["speech_end_s"] == pytest.approx(1.5)
    # and its silences are +-1 LSB of noise, not digital zero
    silence = pcm[:48000]
    assert np.abs(silence).max() == 1 and np.count_nonzero(silence) > 0.5 * len(silence)

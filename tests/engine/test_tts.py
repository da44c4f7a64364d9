import logging
import threading

import numpy as np
import onnxruntime
import pytest

from tests.support.clips import words
from voiceapp.engine.audio import resample
from voiceapp.engine.devices import CPU_PROVIDER, CUDA_PROVIDER
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.models import default_voice
from voiceapp.engine.tts import PiperTTS, SpokenLines, speakable


def test_synthesized_speech_is_understood_by_asr(models: LocalInference) -> None:
    # given the default voice
    voice = default_voice()
    # when a sentence is synthesized
    audio = np.concatenate(
        list(models.tts.synthesize("The library opens at nine.", voice, threading.Event()))
    )
    rate = models.tts.sample_rate(voice)
    # then it is about a second or two of audio that ASR understands
    assert rate == 22050
    assert 0.8 < len(audio) / rate < 4.0
    heard = models.asr.transcribe(resample(audio, rate, 16000), "en")
    assert {"library", "nine"} <= words(heard.text.replace("9", "nine"))


def test_cancel_stops_between_sentences(models: LocalInference) -> None:
    cancel = threading.Event()
    out = []
    for chunk in models.tts.synthesize("One. Two. Three. Four.", default_voice(), cancel):
        out.append(chunk)
        cancel.set()
    assert len(out) == 1


def test_markup_and_symbols_are_not_read_out() -> None:
    assert speakable("**Bold** _text_ and `code` #1 🙂") == "Bold text and code 1"
    assert list(speakable("***")) == []


def test_voices_run_on_the_providers_the_device_plan_chose(models: LocalInference) -> None:
    # given the default models, loaded with this machine's device plan
    assert models.devices is not None
    # when a voice is loaded
    sessions = models.tts._voice(default_voice()).sessions
    # then ONNX Runtime runs it (both halves) on the planned providers, in order
    assert len(sessions) == 2
    for session in sessions:
        assert session.get_providers() == list(models.devices.tts_providers)


@pytest.mark.skipif(
    CUDA_PROVIDER in onnxruntime.get_available_providers(), reason="ONNX Runtime without CUDA"
)
def test_a_voice_that_cannot_have_its_provider_says_so_and_still_speaks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given Piper asked for CUDA where ONNX Runtime has only the CPU
    tts = PiperTTS(providers=(CUDA_PROVIDER, CPU_PROVIDER))
    voice = default_voice()
    # when it speaks
    with (
        caplog.at_level(logging.WARNING, logger="voiceapp.engine.tts"),
        pytest.warns(UserWarning, match="not in available provider names"),
    ):
        audio = list(tts.synthesize("Hello there.", voice, threading.Event()))
    # then the voice ran on the CPU, and the log says it was not the planned provider
    assert [s.get_providers() for s in tts._voice(voice).sessions] == [[CPU_PROVIDER]] * 2
    assert f"runs on {CPU_PROVIDER}, not {CUDA_PROVIDER}" in caplog.text
    assert sum(len(chunk) for chunk in audio) > 0.3 * tts.sample_rate(voice)


def test_a_line_said_again_is_replayed_not_synthesized() -> None:
    # given a voice that has said a line once
    tts = PiperTTS(lines=SpokenLines())
    voice = default_voice()
    line = "Goodbye, and thank you for calling the lighthouse."
    first = np.concatenate(list(tts.synthesize(line, voice, threading.Event())))
    assert len(tts.lines) == 0  # said once: only remembered as seen
    # when it says it a second and a third time
    second = np.concatenate(list(tts.synthesize(line, voice, threading.Event())))
    third = np.concatenate(list(tts.synthesize(line, voice, threading.Event())))
    # then the second was synthesized and kept, and the third is its audio, replayed
    assert (tts.lines.misses, tts.lines.hits) == (2, 1)
    assert len(tts.lines) == 1
    assert np.array_equal(second, third)
    assert abs(len(first) - len(third)) < 0.1 * len(first)  # Piper varies a little
    # and what a caller of synthesize does to the audio does not change what is kept
    chunk = next(tts.synthesize(line, voice, threading.Event()))
    chunk[:] = 0.0
    assert np.array_equal(
        np.concatenate(list(tts.synthesize(line, voice, threading.Event()))), third
    )
    # and a replay stops when cancelled, as synthesis does
    cancel = threading.Event()
    cancel.set()
    assert list(tts.synthesize(line, voice, cancel)) == []


def test_spoken_lines_keep_the_most_recent_within_their_size() -> None:
    lines = SpokenLines(max_bytes=3 * 4000, remember=100)
    audio = [np.zeros(1000, dtype=np.float32)]  # 4000 bytes each
    for name in ("a", "b", "c", "d"):
        key = ("voice.onnx", 1.0, name)
        lines.offer(key, list(audio))  # seen
        lines.offer(key, [a.copy() for a in audio])  # kept
    assert len(lines) == 3
    assert lines.get(("voice.onnx", 1.0, "a")) is None  # the oldest went first
    kept = lines.get(("voice.onnx", 1.0, "d"))
    assert kept is not None and not kept[0].flags.writeable
    # a line too long for the whole cache is not kept at all
    long_key = ("voice.onnx", 1.0, "long")
    for _ in range(2):
        lines.offer(long_key, [np.zeros(4000, dtype=np.float32)])
    assert lines.get(long_key) is None and len(lines) == 3

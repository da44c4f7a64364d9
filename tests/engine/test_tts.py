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
from voiceapp.engine.tts import PiperTTS, speakable


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
    session = models.tts._voice(default_voice()).session
    # then ONNX Runtime runs it on the planned providers, in order
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
    assert tts._voice(voice).session.get_providers() == [CPU_PROVIDER]
    assert f"runs on {CPU_PROVIDER}, not {CUDA_PROVIDER}" in caplog.text
    assert sum(len(chunk) for chunk in audio) > 0.3 * tts.sample_rate(voice)

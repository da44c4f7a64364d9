import threading

import numpy as np

from voiceapp.engine.audio import resample
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.models import default_voice
from voiceapp.engine.tts import speakable

from .conftest import words


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

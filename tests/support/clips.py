"""Real audio for tests, the same on every run: questions spoken by Piper's
en_US-joe (seeded) and espeak-ng, non-speech sounds from sox (noise, music-like
tones, clicks, silence), PCM16 24 kHz bytes as the realtime API takes them, and
a text's words for comparing transcripts."""

from __future__ import annotations

import functools
import subprocess
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime

from voiceapp.engine.audio import read_wav, resample
from voiceapp.engine.models import default_voice
from voiceapp.engine.tts import PiperTTS


@dataclass(frozen=True)
class Clip:
    samples: np.ndarray  # float32 mono
    rate: int
    text: str = ""

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate

    def at(self, rate: int) -> np.ndarray:
        return resample(self.samples, self.rate, rate)


def piper_clip(text: str) -> Clip:
    """`text` in Piper's voice, the same rendition on every run.

    Piper draws the noise that varies its prosody inside the ONNX graph, from a
    generator seeded when the session is created; a fresh session after a fixed
    seed makes the clip reproducible, so a test hears the same audio each time.
    """
    onnxruntime.set_seed(zlib.crc32(text.encode()))
    tts = PiperTTS(windowed=False)  # as Piper says it: the clips stay what they were
    voice = default_voice()
    chunks = list(tts.synthesize(text, voice, threading.Event()))
    return Clip(np.concatenate(chunks), tts.sample_rate(voice), text)


def espeak_clip(text: str, workdir: Path, name: str) -> Clip:
    path = workdir / f"{name}.wav"
    subprocess.run(["espeak-ng", "-s", "165", "-w", str(path), text], check=True)
    samples, rate = read_wav(path)
    return Clip(samples, rate, text)


def sox_clip(workdir: Path, name: str, *effects: str, rate: int = 16000) -> Clip:
    path = workdir / f"{name}.wav"
    cmd = ["sox", "-n", "-r", str(rate), "-b", "16", "-c", "1", str(path), *effects]
    subprocess.run(cmd, check=True)
    samples, got = read_wav(path)
    return Clip(samples, got)


def silence(seconds: float, rate: int = 16000) -> Clip:
    return Clip(np.zeros(int(seconds * rate), dtype=np.float32), rate)


def join(*clips: Clip, rate: int = 16000) -> Clip:
    return Clip(np.concatenate([c.at(rate) for c in clips]), rate, " ".join(c.text for c in clips))


# A C-major chord pulsing four times a second: tonal, rhythmic, not speech.
MUSIC = ("synth", "3", "sine", "261.6", "sine", "329.6", "sine", "392", "tremolo", "4", "60")


@functools.cache
def audio_set(workdir: Path) -> dict[str, Clip]:
    clicks = np.zeros(16000 * 3, dtype=np.float32)
    clicks[::4000] = 0.9  # a sharp click every 250 ms
    return {
        "capital": piper_clip("What is the capital of France?"),
        "weather": espeak_clip("How is the weather today in London?", workdir, "weather"),
        "story": piper_clip("Please tell me a long story about a brave little dragon."),
        "long": espeak_clip(
            "I would like to book a table for four people tomorrow evening at seven, "
            "and could you also tell me whether you have vegetarian dishes?",
            workdir,
            "long",
        ),
        "paused": join(piper_clip("What is the capital"), silence(0.6), piper_clip("of Germany?")),
        "noise": sox_clip(workdir, "noise", "synth", "3", "whitenoise", "vol", "0.3"),
        "pink": sox_clip(workdir, "pink", "synth", "3", "pinknoise", "vol", "0.5"),
        "music": sox_clip(workdir, "music", *MUSIC),
        "clicks": Clip(clicks, 16000),
        "silence": silence(3.0),
    }


def pcm24(samples: np.ndarray, rate: int) -> bytes:
    mono = resample(samples, rate, 24000)
    return (np.clip(mono, -1, 1) * 32767).astype("<i2").tobytes()


def words(text: str) -> set[str]:
    return {w.strip(".,?!'\"").lower() for w in text.split()}

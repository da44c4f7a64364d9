"""Spoken questions for the benchmark: two voices (Piper joe, espeak-ng), short and long,
and one with a pause mid-sentence. Generated on first use into a cache directory."""

from __future__ import annotations

import itertools
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voiceapp.engine.audio import read_wav, resample, write_wav

from .wer_clips import _piper as seeded_piper

RATE = 24000  # what the realtime transport sends


@dataclass(frozen=True)
class Question:
    name: str
    voice: str
    text: str
    samples: np.ndarray  # float32 mono at RATE
    speech_end_s: float  # last voiced sample, measured on the audio
    segment_ends_s: tuple[float, ...]  # ends of speech followed by >= 300 ms of silence


PIPER = {
    "capital": "What is the capital of France?",
    "book": "Can you recommend a good book?",
    "hours": "What time does the store open tomorrow morning?",
    "email_long": "I would like to know how I can change the email address on my account, "
    "because I no longer use the old one.",
}
ESPEAK = {
    "weather": "How is the weather today?",
    "space": "Tell me a fun fact about space.",
    "password_long": "Could you please explain how to reset my password if I no longer "
    "have access to my old phone number?",
}
PAUSED = ("paused", "What is the capital", 0.7, "of Italy?")


def speech_end(samples: np.ndarray, rate: int) -> float:
    """Seconds to the end of the last 10 ms frame louder than -40 dBFS."""
    frame = rate // 100
    n = len(samples) // frame
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.nonzero(rms > 0.01)[0]
    return float((loud[-1] + 1) * frame / rate) if len(loud) else 0.0


def segment_ends(samples: np.ndarray, rate: int, gap_s: float = 0.3) -> tuple[float, ...]:
    """Where stretches of speech end (before a pause of at least `gap_s`, or the clip's end)."""
    frame = rate // 100
    n = len(samples) // frame
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.nonzero(rms > 0.01)[0]
    ends = [
        float((a + 1) * frame / rate)
        for a, b in itertools.pairwise(loud)
        if (b - a) * frame / rate >= gap_s
    ]
    if len(loud):
        ends.append(float((loud[-1] + 1) * frame / rate))
    return tuple(ends)


def _piper(text: str) -> np.ndarray:
    """`text` in Piper's default voice at RATE, seeded: a checkout that renders its
    clips anew (a worktree, another machine) gets the same samples, where one Piper
    session for all of them gave each run other prosody and other transcripts."""
    audio, rate = seeded_piper(text)
    return resample(audio, rate, RATE)


def _espeak(text: str, path: Path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-s", "165", "-w", str(path), text], check=True)
    audio, rate = read_wav(path)
    return resample(audio, rate, RATE)


def load_questions(cache: Path) -> list[Question]:
    cache.mkdir(parents=True, exist_ok=True)
    out: list[Question] = []

    def add(name: str, voice: str, text: str, make: object) -> None:
        path = cache / f"{name}.wav"
        if path.exists():
            samples, _ = read_wav(path)
        else:
            samples = make()  # type: ignore[operator]
            write_wav(path, samples, RATE)
        out.append(
            Question(
                name,
                voice,
                text,
                samples,
                speech_end(samples, RATE),
                segment_ends(samples, RATE),
            )
        )

    for name, text in PIPER.items():
        add(name, "piper", text, lambda t=text: _piper(t))
    for name, text in ESPEAK.items():
        add(name, "espeak", text, lambda t=text, n=name: _espeak(t, cache / f"{n}.raw.wav"))
    name, first, pause, second = PAUSED
    add(
        name,
        "piper",
        f"{first} ... {second}",
        lambda: np.concatenate(
            [_piper(first), np.zeros(int(pause * RATE), np.float32), _piper(second)]
        ),
    )
    return out


def unseen_voice_questions(cache: Path) -> list[Question]:
    """The WER benchmark's questions (bench/wer_clips.py) as benchmark questions:
    Piper joe at three speeds and espeak-ng in seven accents and speeds, none of
    which the turn-taking was tuned on. Its counting clips are left out: they ask
    nothing."""
    from .wer_clips import load_clips

    out = []
    for clip in load_clips(cache):
        if clip.name.startswith("count_"):
            continue
        out.append(
            Question(
                f"wer_{clip.name}",
                clip.voice,
                clip.text,
                clip.samples,
                speech_end(clip.samples, RATE),
                segment_ends(clip.samples, RATE),
            )
        )
    return out

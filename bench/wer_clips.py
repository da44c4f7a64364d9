"""Spoken questions for the WER benchmark, and the text normalizer and WER it is scored with.

Several voices (Piper's joe at three speeds, seeded so each rendition is the
same on every run; espeak-ng in five accents and speeds), counting with short
pauses, and questions that start on clear consonants. Every clip carries
+-1 LSB of dither, like a real microphone's noise floor, so nothing the
engine hears is exact digital silence. Generated once into a cache directory.
"""

from __future__ import annotations

import re
import subprocess
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voiceapp.engine.audio import read_wav, resample, write_wav
from voiceapp.engine.models import default_voice

RATE = 24000  # what the realtime transport sends
PAUSE_S = 0.22  # between counted numbers: longer than the turn detector's pause, short of its end
LEAD_S, TAIL_S = 0.3, 0.5  # silence recorded before and after the words


@dataclass(frozen=True)
class WerClip:
    name: str
    voice: str
    text: str
    samples: np.ndarray  # float32 mono at RATE, dithered, LEAD_S and TAIL_S around the words


# name: (voice, speed or espeak words per minute, text); parts joined by PAUSE_S when a tuple
PIPER: dict[str, tuple[float, str | tuple[str, ...]]] = {
    "parking": (1.0, "Is there parking near the bakery?"),
    "store_hours": (1.0, "What time does the store open tomorrow morning?"),
    "book_table": (1.2, "Can you book a table for two people at eight?"),
    "blue_coat": (0.85, "Please check the price of the blue coat."),
    "bread": (1.0, "Where can I buy fresh bread and cheese?"),
    "count_piper": (1.0, ("One,", "two,", "three,", "four,", "five.")),
}
ESPEAK: dict[str, tuple[str, int, str | tuple[str, ...]]] = {
    "weather": ("en-us", 165, "How is the weather today?"),
    "password": ("en-gb", 140, "Could you please explain how to reset my password?"),
    "delivery": ("en-us+f3", 190, "Do you deliver to the north side of town?"),
    "pharmacy": ("en-gb-scotland", 160, "What is the phone number of the pharmacy?"),
    "space": ("en-029", 150, "Tell me a fun fact about space."),
    "email": ("en-us+m3", 175, "I would like to change the email address on my account."),
    "cancel": ("en-gb-x-rp", 170, "Please cancel my order from last Tuesday."),
    "count_espeak": ("en-us", 165, ("Six,", "seven,", "eight,", "nine,", "ten.")),
}


def dither(samples: np.ndarray, seed: int) -> np.ndarray:
    """Add +-1 LSB (PCM16) of uniform integer noise, as a microphone's floor would."""
    rng = np.random.default_rng(seed)
    noise = rng.integers(-1, 2, size=len(samples)).astype(np.float32) / 32768.0
    return (samples + noise).astype(np.float32)


def _piper(text: str, speed: float = 1.0) -> tuple[np.ndarray, int]:
    """`text` in Piper's default voice, the same samples in every checkout."""
    import onnxruntime

    from voiceapp.engine.tts import PiperTTS, VoiceSpec

    # Piper draws its prosody noise in the ONNX graph from a generator seeded when
    # the session is made: a fixed seed and a fresh session give the same clip.
    onnxruntime.set_seed(zlib.crc32(f"{text}|{speed}".encode()))
    tts = PiperTTS(threads=2, windowed=False)  # a caller's audio, as it was
    base = default_voice()
    voice = VoiceSpec(base.voice_id, base.model_path, speed)
    audio = np.concatenate(list(tts.synthesize(text, voice, threading.Event())))
    return audio, tts.sample_rate(voice)


def _espeak(text: str, voice: str, wpm: int, path: Path) -> tuple[np.ndarray, int]:
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(path), text], check=True)
    return read_wav(path)


def _make(cache: Path, name: str) -> np.ndarray:
    """The words of clip `name` at RATE, without the lead, tail and dither."""
    if name in PIPER:
        speed, text = PIPER[name]

        def say(part: str) -> tuple[np.ndarray, int]:
            return _piper(part, speed)

    else:
        voice, wpm, text = ESPEAK[name]
        raw = cache / f"{name}.raw.wav"

        def say(part: str) -> tuple[np.ndarray, int]:
            return _espeak(part, voice, wpm, raw)

    if isinstance(text, str):
        return resample(*say(text), RATE)
    gap = np.zeros(int(PAUSE_S * RATE), np.float32)
    pieces: list[np.ndarray] = []
    for i, part in enumerate(text):
        pieces += ([gap] if i else []) + [resample(*say(part), RATE)]
    return np.concatenate(pieces)


def load_clips(cache: Path) -> list[WerClip]:
    cache.mkdir(parents=True, exist_ok=True)
    clips: list[WerClip] = []
    voices = {n: f"piper joe x{speed}" for n, (speed, _) in PIPER.items()}
    voices |= {n: f"espeak {voice} {wpm}wpm" for n, (voice, wpm, _) in ESPEAK.items()}
    texts = {n: t for n, (_, t) in PIPER.items()} | {n: t for n, (_, _, t) in ESPEAK.items()}
    for name, text in texts.items():
        path = cache / f"{name}.wav"
        if not path.exists():
            # As a recorded question: a little room before and after the words.
            lead, tail = np.zeros(int(LEAD_S * RATE)), np.zeros(int(TAIL_S * RATE))
            spoken = np.concatenate([lead, _make(cache, name), tail]).astype(np.float32)
            write_wav(path, dither(spoken, zlib.crc32(name.encode())), RATE)
        samples, _ = read_wav(path)  # what a client sends: the PCM16 rendition
        spoken_text = text if isinstance(text, str) else " ".join(text)
        clips.append(WerClip(name, voices[name], spoken_text, samples))
    return clips


# ----- scoring ---------------------------------------------------------------

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINALS = {"1st": "first", "2nd": "second", "3rd": "third", "5th": "fifth", "8th": "eighth"}


def number_words(n: int) -> str:
    """0..999999 in words, the way people say them ("one hundred twenty three")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f" {_ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + (f" {number_words(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    return f"{number_words(thousands)} thousand" + (f" {number_words(rest)}" if rest else "")


def normalize(text: str) -> list[str]:
    """Lowercase words without punctuation; digits become number words; "7:30" two words."""
    t = text.lower().replace("&", " and ").replace("%", " percent")
    t = re.sub(r"(\d+):(\d\d)", lambda m: f"{m[1]} {int(m[2]) or ''}", t)
    t = re.sub(r"\b(\d+)(st|nd|rd|th)\b", lambda m: _ORDINALS.get(m[0], f"{m[1]}th"), t)
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)  # 1,000
    t = re.sub(r"\d+", lambda m: f" {number_words(int(m[0]))} " if len(m[0]) < 7 else m[0], t)
    t = re.sub(r"[-/]", " ", t)
    t = re.sub(r"[^a-z0-9' ]", " ", t)
    return [w.strip("'") for w in t.split() if w.strip("'")]


@dataclass(frozen=True)
class Errors:
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int

    @property
    def total(self) -> int:
        return self.substitutions + self.deletions + self.insertions


def word_errors(reference: str, hypothesis: str) -> Errors:
    """Levenshtein alignment of normalized words, split into S, D and I."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    # cost[i][j] = (errors, subs, dels, ins) for ref[:i] against hyp[:j]
    prev = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i in range(1, len(ref) + 1):
        row = [(i, 0, i, 0)]
        for j in range(1, len(hyp) + 1):
            same = ref[i - 1] == hyp[j - 1]
            d = prev[j - 1]
            options = [
                (d[0] + (not same), d[1] + (not same), d[2], d[3]),
                (prev[j][0] + 1, prev[j][1], prev[j][2] + 1, prev[j][3]),
                (row[j - 1][0] + 1, row[j - 1][1], row[j - 1][2], row[j - 1][3] + 1),
            ]
            row.append(min(options))
        prev = row
    _, s, d_, i_ = prev[-1]
    return Errors(s, d_, i_, len(ref))


def corpus_wer(pairs: list[tuple[str, str]]) -> float:
    """Errors over reference words, summed over all pairs (reference, hypothesis)."""
    errors = [word_errors(ref, hyp) for ref, hyp in pairs]
    words = sum(e.reference_words for e in errors)
    return sum(e.total for e in errors) / max(1, words)

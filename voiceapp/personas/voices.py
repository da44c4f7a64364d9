"""Discovery of Piper voices: installed voice packages and a models directory.

A Piper voice is a ``NAME.onnx`` file with its ``NAME.onnx.json`` config beside it.
"""

from __future__ import annotations

import json
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


def _package_model_paths() -> list[Path]:
    paths = []
    for dist in metadata.distributions():
        for file in dist.files or ():
            if file.name.endswith(".onnx.json"):
                model = Path(str(dist.locate_file(file))[: -len(".json")])
                if model.is_file():
                    paths.append(model)
    return paths


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

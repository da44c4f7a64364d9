from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from voiceapp.personas.services import voice_add
from voiceapp.personas.voices import VoiceConfigError


class Command(BaseCommand):
    help = (
        "Add a Piper voice: PATH is NAME.onnx, with NAME.onnx.json beside it. The pair is "
        "checked (Piper loads it; the config states audio.sample_rate and language.code), "
        "copied into VOICE_MODELS_DIR and added to the catalogue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the voice's .onnx model")

    def handle(self, *args: Any, path: Path, **options: Any) -> None:
        try:
            voice = voice_add(model_path=path)
        except VoiceConfigError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Added voice {voice.voice_id} ({voice.language}, {voice.sample_rate} Hz) "
            f"from {voice.model_path}."
        )

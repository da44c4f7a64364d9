from typing import Any

from django.core.management.base import BaseCommand

from voiceapp.personas.services import voices_sync


class Command(BaseCommand):
    help = "Discover installed Piper voices (packages and VOICE_MODELS_DIR)."

    def handle(self, *args: Any, **options: Any) -> None:
        result = voices_sync()
        for problem in result.problems:
            self.stderr.write(self.style.WARNING(problem))
        self.stdout.write(
            f"Voices: {len(result.created)} new, {len(result.updated)} updated, "
            f"{len(result.missing)} no longer installed."
        )

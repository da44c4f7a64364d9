from celery import shared_task

from voiceapp.personas.models import Voice
from voiceapp.personas.services import voice_preview_generate


@shared_task(name="personas.generate_voice_preview")
def generate_voice_preview(voice_pk: int, text: str | None = None) -> str:
    voice = Voice.objects.get(pk=voice_pk)
    return str(voice_preview_generate(voice=voice, text=text))

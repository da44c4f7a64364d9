"""`manage.py voice_turn`: a WAV question in, a spoken reply out."""

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.engine.conftest import Clip, words
from voiceapp.engine.audio import read_wav, resample, write_wav
from voiceapp.engine.inference import LocalInference
from voiceapp.inference import runtime
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_update


@pytest.fixture
def embedded(settings: Any, monkeypatch: pytest.MonkeyPatch, models: LocalInference) -> None:
    settings.INFERENCE_EMBEDDED = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(runtime, "_local", models)


@pytest.mark.django_db
def test_voice_turn_answers_a_wav_question(
    embedded: None,
    make_tenant: Callable[..., Any],
    models: LocalInference,
    clips: dict[str, Clip],
    tmp_path: Path,
) -> None:
    # given an organization with its default persona and a 44.1 kHz question WAV
    tenant = make_tenant("Turn Dental")
    persona = Persona.objects.get(org=tenant.org, slug="assistant")
    persona_update(persona=persona, temperature=0.0)  # a 135M model drifts when sampling
    question = tmp_path / "question.wav"
    write_wav(question, clips["capital"].at(44100), 44100)
    reply = tmp_path / "reply.wav"
    out = StringIO()
    # when the command runs
    call_command(
        "voice_turn",
        persona="assistant",
        org=tenant.org.slug,
        input=str(question),
        out=str(reply),
        fast=True,
        stdout=out,
    )
    # then it prints the transcript, the reply and the spans, and writes the reply as speech
    result = json.loads(out.getvalue())
    assert {"capital", "france"} <= words(result["transcript"])
    assert result["reply"] and result["status"] == "completed"
    assert result["latency"]["asr_ms"] is not None
    audio, rate = read_wav(reply)
    assert rate == 24000 and len(audio) > rate // 2
    heard = models.asr.transcribe(resample(audio, rate, 16000), "en")
    assert words(heard.text) & words(result["reply"])


@pytest.mark.django_db
def test_ambiguous_or_unknown_persona_is_a_clear_error(
    embedded: None, make_tenant: Callable[..., Any], tmp_path: Path
) -> None:
    make_tenant("One")
    make_tenant("Two")
    with pytest.raises(CommandError, match="ambiguous"):
        call_command("voice_turn", persona="assistant", input="x.wav", out=str(tmp_path / "r"))
    with pytest.raises(CommandError, match="no persona"):
        call_command("voice_turn", persona="nobody", input="x.wav", out=str(tmp_path / "r"))

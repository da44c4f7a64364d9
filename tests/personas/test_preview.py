"""Voice previews: real Piper synthesis, run as a Celery task."""

from __future__ import annotations

import time
import wave
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse

from tests.support.tenants import Tenant
from voiceapp.personas.models import Voice
from voiceapp.personas.services import voice_preview_request, voice_preview_state

pytestmark = pytest.mark.django_db


def _speech_stats(path: Path) -> tuple[float, float]:
    with wave.open(str(path)) as wav:
        rate = wav.getframerate()
        samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16)
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))
    return len(samples) / rate, rms


def test_preview_synthesizes_speech_and_is_cached(tenant_a: Tenant) -> None:
    voice = Voice.objects.get(voice_id="en_US-joe-medium")
    assert voice_preview_state(voice=voice) == {"status": "none"}

    state = voice_preview_request(voice=voice)  # Celery runs eagerly in the test settings

    assert state == {"status": "ready"}
    voice.refresh_from_db()
    seconds, rms = _speech_stats(Path(voice.preview_path))
    assert 1.5 < seconds < 10, seconds
    assert rms > 300, "the preview should be audible speech, not silence"
    generated_at = voice.preview_generated_at
    assert voice_preview_request(voice=voice) == {"status": "ready"}
    voice.refresh_from_db()
    assert voice.preview_generated_at == generated_at, "a ready preview is not synthesized again"


def test_dashboard_preview_endpoint_serves_the_wav(tenant_a: Tenant) -> None:
    voice = Voice.objects.get(voice_id="en_US-joe-medium")
    url = reverse("dashboard:voice_preview", args=[voice.pk])

    assert tenant_a.client.get(url).json() == {"status": "none"}
    started = tenant_a.client.post(url)

    assert started.status_code == 200
    body = started.json()
    assert body["status"] == "ready"
    audio = tenant_a.client.get(body["audio_url"])
    assert audio.status_code == 200
    assert audio["Content-Type"] == "audio/wav"
    assert b"".join(audio.streaming_content)[:4] == b"RIFF"


def test_broken_voice_reports_a_failure(tenant_a: Tenant, tmp_path: Path) -> None:
    broken = tmp_path / "en_US-broken-low.onnx"
    broken.write_bytes(b"not an onnx model")
    voice = Voice.objects.create(
        voice_id="en_US-broken-low",
        name="Broken",
        language="en_US",
        sample_rate=22050,
        model_path=str(broken),
        source=Voice.Source.DIRECTORY,
    )

    state = voice_preview_request(voice=voice)

    assert state["status"] == "failed"
    assert "preview" in state["message"].lower() or "synthesis" in state["message"].lower()
    assert voice_preview_state(voice=voice)["status"] == "failed"


@pytest.mark.django_db(transaction=True)
def test_preview_runs_on_a_real_celery_worker_over_redis(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    """The production path: the web process enqueues on the Redis broker and a
    separate worker thread picks the task up."""
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (always present under CI, where this is enforced)")
    from celery.contrib.testing.worker import start_worker

    from voiceapp.celery import app

    app.conf.update(
        task_always_eager=False, broker_url=settings.REDIS_URL, result_backend=settings.REDIS_URL
    )
    voice = Voice.objects.get(voice_id="en_US-joe-medium")
    try:
        with start_worker(
            app, perform_ping_check=False, pool="solo", concurrency=1, shutdown_timeout=30
        ):
            assert voice_preview_request(voice=voice)["status"] in ("pending", "ready")
            deadline = time.monotonic() + 60
            while voice_preview_state(voice=voice)["status"] != "ready":
                assert time.monotonic() < deadline, "the worker did not produce the preview"
                time.sleep(0.2)
                voice.refresh_from_db()
    finally:
        app.conf.update(task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER)
    seconds, rms = _speech_stats(Path(voice.preview_path))
    assert seconds > 1.5 and rms > 300


def test_persona_page_previews_its_own_greeting(tenant_a: Tenant) -> None:
    # given a persona with a short greeting
    persona = tenant_a.org.personas.get()
    persona.greeting = "Hi."
    persona.save()
    url = reverse("dashboard:persona_voice_preview", args=[persona.pk])
    page = tenant_a.client.get(reverse("dashboard:persona_edit", args=[persona.pk]))
    assert f'data-preview-url="{url}"' in page.content.decode()

    # when the member asks to hear it, then changes the greeting and asks again
    short = tenant_a.client.post(url).json()
    short_audio = tenant_a.client.get(short["audio_url"])
    short_wav = b"".join(short_audio.streaming_content)
    persona.greeting = "Good afternoon and welcome to Alpha Dental, how may I help you today?"
    persona.save()
    assert tenant_a.client.get(url).json() == {"status": "none"}, "a new greeting, a new sample"
    long = tenant_a.client.post(url).json()
    long_wav = b"".join(tenant_a.client.get(long["audio_url"]).streaming_content)

    # then each sample speaks its greeting: the long one lasts several times as long
    assert short["status"] == long["status"] == "ready"
    assert short_wav[:4] == long_wav[:4] == b"RIFF"
    assert len(long_wav) > 3 * len(short_wav)
    # and the voice's catalogue sample was not made or replaced by them
    assert Voice.objects.get(pk=persona.voice_id).preview_path == ""

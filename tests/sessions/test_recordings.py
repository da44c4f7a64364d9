"""Call recordings kept in storage (sessions/recordings.py): encoded as Ogg Opus
from real speech, served to the call's organization only, deleted with the call
and when they expire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from sessions.models import Call, CallRecording
from sessions.realtime.recording import RATE
from sessions.recordings import recordings_purge_expired
from tests.support.calls import make_call
from tests.support.recordings import decode, record_audio
from tests.support.tenants import Tenant
from voiceapp.engine.audio import resample
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def speech() -> tuple[np.ndarray, np.ndarray]:
    """A caller's question and the agent's answer, spoken by Piper, at 24 kHz."""
    from tests.support.clips import piper_clip

    question = piper_clip("What time do you open on Saturday?")
    answer = piper_clip("We open at nine in the morning on Saturdays.")
    return resample(question.samples, question.rate, RATE), resample(
        answer.samples, answer.rate, RATE
    )


def recorded_call(tenant: Tenant, speech: tuple[np.ndarray, np.ndarray]) -> CallRecording:
    persona = Persona.objects.get(org=tenant.org, slug="assistant")
    call = make_call(persona, started_at=timezone.now() - timedelta(minutes=5), duration_s=8.0)
    caller, agent = speech
    return record_audio(call, caller=caller, agent=agent, at_s=len(caller) / RATE + 0.5)


def rms(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


def test_a_recording_is_ogg_opus_with_the_caller_left_and_the_agent_right(
    tenant_a: Tenant, speech: tuple[np.ndarray, np.ndarray]
) -> None:
    # given a call whose caller asked a question and whose agent answered after it
    caller, agent = speech
    answer_at = len(caller) / RATE + 0.5

    # when its audio is captured and encoded
    recording = recorded_call(tenant_a, speech)

    # then the stored file is Ogg Opus, as long as the call's audio, and decodes to
    # the caller on the left, then the agent on the right
    assert recording.file.name.endswith(".ogg") and default_storage.exists(recording.file.name)
    assert recording.size_bytes == default_storage.size(recording.file.name)
    with recording.file.open("rb") as f:
        assert f.read(4) == b"OggS"
    codec, rate, audio = decode(recording.file.path)
    expected_s = answer_at + len(agent) / RATE
    assert codec == "opus"
    assert audio.shape[1] == 2
    assert abs(len(audio) / rate - expected_s) < 0.1
    assert abs(recording.duration_s - expected_s) < 0.1
    question_part = slice(int(0.2 * rate), int((answer_at - 0.6) * rate))
    answer_part = slice(int((answer_at + 0.2) * rate), int((expected_s - 0.2) * rate))
    left, right = audio[:, 0], audio[:, 1]
    assert rms(left[question_part]) > 0.02 and rms(right[question_part]) < 0.002
    assert rms(right[answer_part]) > 0.02 and rms(left[answer_part]) < 0.002
    assert recording.marks == {"item_reply": round(answer_at, 3)}
    assert recording.expires_at - recording.created_at == timedelta(days=30)


def test_deleting_the_call_deletes_its_audio_file(
    tenant_a: Tenant, speech: tuple[np.ndarray, np.ndarray]
) -> None:
    # given a recorded call
    recording = recorded_call(tenant_a, speech)
    name = recording.file.name
    assert default_storage.exists(name)

    # when the call is deleted
    Call.objects.filter(pk=recording.call_id).delete()

    # then its recording and the file are gone
    assert not CallRecording.objects.exists()
    assert not default_storage.exists(name)


def test_retention_deletes_expired_recordings_only(
    tenant_a: Tenant, speech: tuple[np.ndarray, np.ndarray]
) -> None:
    # given two recorded calls, one past its expiry
    expired, kept = recorded_call(tenant_a, speech), recorded_call(tenant_a, speech)
    now = datetime(2030, 1, 1, tzinfo=UTC)
    CallRecording.objects.filter(pk=expired.pk).update(expires_at=now - timedelta(seconds=1))
    CallRecording.objects.filter(pk=kept.pk).update(expires_at=now + timedelta(days=1))

    # when retention runs
    deleted = recordings_purge_expired(now=now)

    # then only the expired recording and its file are gone; both calls stay
    assert deleted == 1
    assert list(CallRecording.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not default_storage.exists(expired.file.name)
    assert default_storage.exists(kept.file.name)
    assert Call.objects.count() == 2


def test_the_recording_is_served_to_its_organization_only_with_byte_ranges(
    tenant_a: Tenant, tenant_b: Tenant, speech: tuple[np.ndarray, np.ndarray]
) -> None:
    # given a recorded call of organization A
    recording = recorded_call(tenant_a, speech)
    url = reverse("dashboard:call_recording", args=[recording.call_id])
    size = recording.size_bytes

    # when A's member and B's member ask for it, whole and in part
    whole = tenant_a.client.get(url)
    part = tenant_a.client.get(url, headers={"Range": "bytes=100-199"})
    tail = tenant_a.client.get(url, headers={"Range": "bytes=-50"})
    beyond = tenant_a.client.get(url, headers={"Range": f"bytes={size}-"})
    foreign = tenant_b.client.get(url)
    page = tenant_a.client.get(reverse("dashboard:call_detail", args=[recording.call_id]))

    # then A gets the file and its ranges, B gets 404, and A's call page has the player
    with recording.file.open("rb") as f:
        data = f.read()
    assert whole.status_code == 200 and whole["Content-Type"] == "audio/ogg"
    assert b"".join(whole.streaming_content) == data
    assert part.status_code == 206 and part.content == data[100:200]
    assert part["Content-Range"] == f"bytes 100-199/{size}"
    assert tail.status_code == 206 and tail.content == data[-50:]
    assert beyond.status_code == 416
    assert foreign.status_code == 404
    html = page.content.decode()
    assert f'src="{url}"' in html and 'id="recording-marks"' in html


def test_a_call_without_a_recording_has_no_player_and_no_audio(tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    call = make_call(
        persona,
        started_at=timezone.now() - timedelta(minutes=1),
        items=[("user", "Hello there", 1.5, False)],
    )

    page = tenant_a.client.get(reverse("dashboard:call_detail", args=[call.pk]))
    audio = tenant_a.client.get(reverse("dashboard:call_recording", args=[call.pk]))

    assert "<audio" not in page.content.decode()
    assert 'data-item="item_0" data-at="1.500000"' in page.content.decode()
    assert audio.status_code == 404

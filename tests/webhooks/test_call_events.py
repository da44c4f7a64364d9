"""call.started and call.ended: from a call's start and end, and from the
reconciliation of calls whose process died."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from sessions.auth import CallGrant
from sessions.models import Call
from sessions.services import call_end, call_item_record, call_start, call_turn_record
from sessions.tasks import reconcile_open_calls
from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver
from webhooks import tasks
from webhooks.models import WebhookDelivery
from webhooks.services import call_event_emit, webhook_endpoint_create

pytestmark = pytest.mark.django_db

EVENTS = ["call.started", "call.ended"]


def open_call(tenant: Tenant) -> Call:
    persona = tenant.org.personas.get()
    grant = CallGrant(
        org_id=tenant.org.pk, persona_id=persona.pk, persona_slug=persona.slug, session_config={}
    )
    return call_start(call_id=str(uuid.uuid4()), grant=grant, transport="websocket", client_info={})


def test_a_call_sends_started_then_ended_with_transcript_and_latency(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=EVENTS)
    with django_capture_on_commit_callbacks(execute=True):
        call = open_call(tenant_a)
    call_id = str(call.pk)
    call_item_record(call_id=call_id, item_id="u1", role="user", text="When do you open?", at_s=1)
    call_item_record(call_id=call_id, item_id="a1", role="assistant", text="At nine.", at_s=2.5)
    for n, v2v in enumerate([400.0, 1000.0, 600.0, 500.0, 700.0]):
        spans = {"v2v_ms": v2v, "asr_ms": 50.0 + n}
        call_turn_record(
            call_id=call_id, response_id=f"r{n}", status="completed", at_s=n, spans=spans
        )

    with django_capture_on_commit_callbacks(execute=True):
        ended = call_end(call_id=call_id, reason="hangup")

    started_msg, ended_msg = (Webhook(secret).verify(r.body, r.headers) for r in receiver.received)
    assert started_msg["type"] == "call.started"
    assert started_msg["data"]["call_id"] == call_id
    assert started_msg["data"]["persona"] == "assistant"
    assert ended is not None and ended_msg["type"] == "call.ended"
    data = ended_msg["data"]
    assert data["call_id"] == call_id and data["persona"] == "assistant"
    assert data["end_reason"] == "hangup" and data["duration_s"] == ended.duration_s
    assert data["started_at"] == ended.started_at.isoformat()
    assert data["ended_at"] == ended.ended_at.isoformat()
    assert [(t["role"], t["text"]) for t in data["transcript"]] == [
        ("user", "When do you open?"),
        ("assistant", "At nine."),
    ]
    latency = data["latency"]
    assert latency["turns"] == 5
    assert latency["v2v_ms"] == {"p50": 600.0, "p95": 940.0}
    assert latency["asr_ms"] == {"p50": 52.0, "p95": 53.8}
    assert latency["tts_first_audio_ms"] is None
    assert receiver.received[1].headers["webhook-id"] == f"msg_call_ended_{uuid.UUID(call_id).hex}"


def test_ending_a_call_twice_sends_call_ended_once(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    call = open_call(tenant_a)

    with django_capture_on_commit_callbacks(execute=True):
        call_end(call_id=str(call.pk), reason="hangup")
        call_end(call_id=str(call.pk), reason="error")
    # a Celery task delivered twice emits nothing new either
    assert call_event_emit(call_id=str(call.pk), event_type="call.ended") == []

    assert len(receiver.received) == 1
    assert WebhookDelivery.objects.filter(event_type="call.ended").count() == 1


def test_a_reconciled_call_gets_call_ended(
    tenant_a: Tenant, receiver: Receiver, settings, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    settings.CALL_STALE_AFTER_S = 60
    stale = open_call(tenant_a)
    started = timezone.now() - timedelta(minutes=10)
    Call.objects.filter(pk=stale.pk).update(
        started_at=started, last_seen_at=started + timedelta(seconds=42)
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert reconcile_open_calls.delay().get() == 1

    (request,) = receiver.received
    data = Webhook(secret).verify(request.body, request.headers)["data"]
    assert data["call_id"] == str(stale.pk)
    assert data["end_reason"] == "lost" and data["duration_s"] == 42


def test_orgs_without_webhooks_queue_nothing(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:
    queued: list[tuple[object, ...]] = []
    monkeypatch.setattr(tasks.emit_call_event, "delay", lambda *a: queued.append(a))

    with django_capture_on_commit_callbacks(execute=True):
        call = open_call(tenant_a)
        call_end(call_id=str(call.pk), reason="hangup")

    assert queued == []


def test_a_broken_queue_never_breaks_a_call(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url="https://93.184.215.14/h", events=EVENTS)

    def broker_down(*args: object) -> None:
        raise ConnectionError("Error 111 connecting to the broker")

    monkeypatch.setattr(tasks.emit_call_event, "delay", broker_down)

    with django_capture_on_commit_callbacks(execute=True):
        call = open_call(tenant_a)
        ended = call_end(call_id=str(call.pk), reason="hangup")

    assert ended is not None and ended.end_reason == "hangup"
    assert Call.objects.get(pk=call.pk).ended_at is not None

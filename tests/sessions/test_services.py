from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions.auth import CallGrant
from sessions.models import Call
from sessions.services import call_end, call_start
from sessions.tasks import reconcile_open_calls
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


def open_call(tenant: Tenant) -> Call:
    persona = tenant.org.personas.get()
    grant = CallGrant(
        org_id=tenant.org.pk, persona_id=persona.pk, persona_slug=persona.slug, session_config={}
    )
    import uuid

    return call_start(call_id=str(uuid.uuid4()), grant=grant, transport="websocket", client_info={})


def test_reconciliation_closes_calls_of_a_dead_process(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_STALE_AFTER_S = 60
    stale, fresh = open_call(tenant_a), open_call(tenant_a)
    started = timezone.now() - timedelta(minutes=10)
    last_seen = started + timedelta(seconds=42)
    Call.objects.filter(pk=stale.pk).update(started_at=started, last_seen_at=last_seen)

    closed = reconcile_open_calls.delay().get()

    assert closed == 1
    stale.refresh_from_db()
    assert stale.end_reason == "lost" and stale.ended_at == last_seen and stale.duration_s == 42
    fresh.refresh_from_db()
    assert fresh.ended_at is None


def test_call_end_is_idempotent(tenant_a: Tenant) -> None:
    call = open_call(tenant_a)

    first = call_end(call_id=str(call.pk), reason="hangup")
    second = call_end(call_id=str(call.pk), reason="error")

    assert first is not None and second is not None
    assert second.end_reason == "hangup" and second.ended_at == first.ended_at

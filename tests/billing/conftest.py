from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions.models import Call
from tests.support.stripe_server import FakeStripe, fake_stripe
from tests.support.tenants import Tenant


@pytest.fixture
def open_call(tenant_a: Tenant) -> Callable[..., Call]:
    """A call in progress that started `age_s` ago (and was last seen `seen_s` ago)."""

    def make(age_s: float = 30.0, seen_s: float = 0.0) -> Call:
        now = timezone.now()
        persona = tenant_a.org.personas.get()
        return Call.objects.create(
            org=tenant_a.org,
            persona=persona,
            persona_name=persona.name,
            transport=Call.Transport.WEBSOCKET,
            started_at=now - timedelta(seconds=age_s),
            last_seen_at=now - timedelta(seconds=seen_s),
        )

    return make


@pytest.fixture
def stripe_api(settings: Any) -> Iterator[FakeStripe]:
    """Stripe reporting on, pointed at a fake Stripe that records every request."""
    with fake_stripe() as fake:
        settings.STRIPE_API_KEY = "sk_test_voiceapp"
        settings.STRIPE_METER_EVENT_NAME = "voice_call_seconds"
        settings.STRIPE_API_BASE = fake.url
        settings.STRIPE_REPORT_THREAD = False
        yield fake

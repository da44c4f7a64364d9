from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create

pytestmark = pytest.mark.django_db


def test_analytics_page_shows_latency_usage_and_endings(tenant_a: Tenant) -> None:
    # given today's calls: one answered quickly, one that ended in an error
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    now = timezone.now() - timedelta(minutes=5)
    make_call(persona, started_at=now, duration_s=90, turns=[{"v2v_ms": 432.0, "asr_ms": 61.0}])
    make_call(persona, started_at=now, duration_s=30, end_reason="error", turns=[{"v2v_ms": 876.0}])

    response = tenant_a.client.get(reverse("dashboard:analytics"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "2 ended calls, 2.0 minutes" in page
    assert page.count("<polyline") == 0  # one day of data: dots, not lines
    assert 'role="img" aria-label="Voice to voice p50, p95 and p99 per day"' in page
    assert "<circle" in page
    data = response.context["data"]
    assert (data.spans["v2v_ms"].n, data.spans["v2v_ms"].p50) == (2, 654.0)
    assert sorted((r["reason"], r["n"]) for r in response.context["end_reasons"]) == [
        ("error", 1),
        ("hangup", 1),
    ]
    assert '<span class="share-label">Error</span><span class="share-bar bad"' in page


def test_analytics_range_and_persona_filter(tenant_a: Tenant) -> None:
    assistant = Persona.objects.get(org=tenant_a.org, slug="assistant")
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    make_call(assistant, started_at=timezone.now() - timedelta(days=20), duration_s=60)
    make_call(sales, started_at=timezone.now() - timedelta(hours=1), duration_s=120)

    week = tenant_a.client.get(reverse("dashboard:analytics"), {"days": "7"})
    month = tenant_a.client.get(reverse("dashboard:analytics"), {"days": "30"})
    sales_only = tenant_a.client.get(
        reverse("dashboard:analytics"), {"days": "30", "persona": sales.pk}
    )
    nonsense = tenant_a.client.get(reverse("dashboard:analytics"), {"days": "9999"})

    assert week.context["data"].usage.calls == 1 and len(week.context["data"].by_day) == 7
    assert month.context["data"].usage.calls == 2
    assert sales_only.context["data"].usage.seconds == 120
    assert nonsense.status_code == 200 and nonsense.context["days"] == 30


def test_analytics_needs_login(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(reverse("dashboard:analytics"))

    assert response.status_code == 302

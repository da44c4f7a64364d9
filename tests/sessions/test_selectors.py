from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from sessions.selectors import DayUsage, PersonaUsage, usage_summary
from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create, persona_delete

pytestmark = pytest.mark.django_db

MIDNIGHT = datetime(2026, 3, 10, tzinfo=UTC)


def test_usage_rounds_each_call_up_and_groups_by_persona_and_day(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    # given calls of two personas over two days, one live, one before the range,
    # and one of another organization
    assistant = Persona.objects.get(org=tenant_a.org, slug="assistant")
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    make_call(assistant, started_at=MIDNIGHT, duration_s=10.2)  # 11 s
    make_call(assistant, started_at=MIDNIGHT + timedelta(hours=5), duration_s=3.0)  # 3 s
    make_call(sales, started_at=MIDNIGHT + timedelta(days=1, hours=23), duration_s=59.01)  # 60
    make_call(sales, started_at=MIDNIGHT + timedelta(days=1), duration_s=None)  # live: not yet
    make_call(assistant, started_at=MIDNIGHT - timedelta(seconds=1), duration_s=100)  # the 9th
    other = Persona.objects.get(org=tenant_b.org, slug="assistant")
    make_call(other, started_at=MIDNIGHT, duration_s=1000)

    # when the 10th to the 12th are summed
    usage = usage_summary(org=tenant_a.org, start=date(2026, 3, 10), end=date(2026, 3, 12))

    # then
    assert (usage.seconds, usage.calls) == (74, 3)
    assert usage.by_persona == [
        PersonaUsage(persona=sales.slug, seconds=60, calls=1),
        PersonaUsage(persona="assistant", seconds=14, calls=2),
    ]
    assert usage.by_day == [
        DayUsage(date=date(2026, 3, 10), seconds=14, calls=2),
        DayUsage(date=date(2026, 3, 11), seconds=60, calls=1),
        DayUsage(date=date(2026, 3, 12), seconds=0, calls=0),
    ]


def test_usage_keeps_calls_of_deleted_personas(tenant_a: Tenant) -> None:
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    make_call(sales, started_at=MIDNIGHT, duration_s=5)
    persona_delete(persona=sales)

    usage = usage_summary(org=tenant_a.org, start=date(2026, 3, 10), end=date(2026, 3, 10))

    assert usage.seconds == 5
    assert usage.by_persona == [PersonaUsage(persona=None, seconds=5, calls=1)]


def test_usage_of_an_empty_range(tenant_a: Tenant) -> None:
    usage = usage_summary(org=tenant_a.org, start=date(2026, 3, 1), end=date(2026, 3, 1))

    assert (usage.seconds, usage.calls, usage.by_persona) == (0, 0, [])
    assert usage.by_day == [DayUsage(date=date(2026, 3, 1), seconds=0, calls=0)]

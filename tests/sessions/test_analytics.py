from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from sessions.analytics import Percentiles, call_analytics, percentile
from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create

DAY = datetime(2026, 3, 10, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 50, None),
        ([7.0], 99, 7.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        (list(range(1, 101)), 95, 95.05),
        (list(range(1, 101)), 99, 99.01),
        ([10.0, 20.0], 100, 20.0),
    ],
)
def test_percentile_interpolates_between_ranks(
    values: list[float], q: float, expected: float | None
) -> None:
    assert percentile([float(v) for v in values], q) == (
        pytest.approx(expected) if expected is not None else None
    )


@pytest.mark.django_db
def test_analytics_of_a_range(tenant_a: Tenant, tenant_b: Tenant) -> None:
    # given two personas' calls over two days, with measured and failed turns,
    # a call outside the range and another organization's call
    assistant = Persona.objects.get(org=tenant_a.org, slug="assistant")
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    make_call(
        assistant,
        started_at=DAY,
        duration_s=30,
        turns=[{"v2v_ms": 400.0, "asr_ms": 50.0}, {"v2v_ms": 600.0, "asr_ms": 70.0}],
    )
    make_call(
        sales,
        started_at=DAY + timedelta(days=1),
        duration_s=60,
        end_reason="error",
        turns=[{"v2v_ms": 1000.0}],
    )
    make_call(assistant, started_at=DAY + timedelta(days=1), duration_s=None)
    make_call(assistant, started_at=DAY - timedelta(days=5), turns=[{"v2v_ms": 9000.0}])
    other = Persona.objects.get(org=tenant_b.org, slug="assistant")
    make_call(other, started_at=DAY, turns=[{"v2v_ms": 5.0}])

    # when
    data = call_analytics(org=tenant_a.org, start=date(2026, 3, 10), end=date(2026, 3, 11))

    # then
    assert data.spans["v2v_ms"] == Percentiles(n=3, p50=600.0, p95=960.0, p99=992.0)
    assert data.spans["asr_ms"].n == 2 and data.spans["tts_first_audio_ms"].n == 0
    day1, day2 = data.by_day
    assert (day1.spans["v2v_ms"].n, day1.spans["v2v_ms"].p50) == (2, 500.0)
    assert (day2.spans["v2v_ms"].n, day2.spans["v2v_ms"].p50) == (1, 1000.0)
    assert [(p.persona, p.calls, p.seconds, p.turns) for p in data.by_persona] == [
        (sales.slug, 1, 60, 1),
        ("assistant", 1, 30, 2),
    ]
    assert dict(data.end_reasons) == {"hangup": 1, "error": 1, "": 1}
    assert dict(data.reply_statuses) == {"completed": 3}
    assert data.usage.calls == 2


@pytest.mark.django_db
def test_analytics_of_one_persona(tenant_a: Tenant) -> None:
    assistant = Persona.objects.get(org=tenant_a.org, slug="assistant")
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    make_call(assistant, started_at=DAY, turns=[{"v2v_ms": 400.0}])
    make_call(sales, started_at=DAY, duration_s=12, turns=[{"v2v_ms": 800.0}])

    data = call_analytics(
        org=tenant_a.org, start=date(2026, 3, 10), end=date(2026, 3, 10), persona=sales
    )

    assert data.spans["v2v_ms"].n == 1 and data.spans["v2v_ms"].p50 == 800.0
    assert data.usage.seconds == 12
    assert [p.persona for p in data.by_persona] == [sales.slug]

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from tests.support.api import Api, error_of
from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db


def test_usage_over_a_range(api: Api, tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    make_call(persona, started_at=datetime(2026, 2, 28, 23, 59, tzinfo=UTC), duration_s=90.4)
    make_call(persona, started_at=datetime(2026, 3, 1, 0, 0, tzinfo=UTC), duration_s=30)

    response = api.get("usage/?start=2026-02-28&end=2026-03-01")

    assert response.status_code == 200
    assert response.json() == {
        "start": "2026-02-28",
        "end": "2026-03-01",
        "seconds": 121,
        "calls": 2,
        "tool_calls": 0,
        "by_persona": [{"persona": "assistant", "seconds": 121, "calls": 2}],
        "by_day": [
            {"date": "2026-02-28", "seconds": 91, "calls": 1},
            {"date": "2026-03-01", "seconds": 30, "calls": 1},
        ],
    }


def test_usage_defaults_to_this_month(api: Api, tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    make_call(persona, started_at=timezone.now() - timedelta(seconds=20), duration_s=7)
    today = timezone.now().date()

    body = api.get("usage/").json()

    assert body["start"] == today.replace(day=1).isoformat()
    assert body["by_day"][-1]["date"][:7] == today.isoformat()[:7]  # to the month's end
    assert (body["seconds"], body["calls"]) == (7, 1)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("start=2026-12-05", "2026-12-05", "2026-12-31"),
        ("start=2028-02-10", "2028-02-10", "2028-02-29"),
        ("end=2026-04-15", "2026-04-01", "2026-04-15"),
        ("start=2025-03-01&end=2026-02-28", "2025-03-01", "2026-02-28"),
    ],
)
def test_open_ends_of_the_range(api: Api, query: str, start: str, end: str) -> None:
    body = api.get("usage/?" + query).json()

    assert (body["start"], body["end"]) == (start, end)
    assert (
        len(body["by_day"])
        == (datetime.fromisoformat(end) - datetime.fromisoformat(start)).days + 1
    )


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("start=2026-02-30", "start"),
        ("start=2026-1-5", "start"),
        ("start=\uff12\uff10\uff12\uff16-03-01", "start"),  # full-width digits
        ("end=tomorrow", "end"),
        ("start=2026-03-02&end=2026-03-01", "end"),
        ("start=2024-01-01&end=2025-01-01", "end"),  # 367 days
    ],
)
def test_bad_ranges_are_a_400(api: Api, query: str, param: str) -> None:
    response = api.get("usage/?" + query)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request" and param in error["details"]
    assert error["message"].startswith(f"{param}: ")


def test_usage_needs_a_key(db: None) -> None:
    response = Api(None).get("usage/")

    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"

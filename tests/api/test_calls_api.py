from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from tests.support.api import Api, error_of
from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 3, 10, tzinfo=UTC)


def _assistant(tenant: Tenant) -> Persona:
    return Persona.objects.get(org=tenant.org, slug="assistant")


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path.removeprefix("/api/v1/") + "?" + parts.query


def test_calls_are_listed_newest_first_across_pages(api: Api, tenant_a: Tenant) -> None:
    # given five calls a minute apart
    persona = _assistant(tenant_a)
    made = [make_call(persona, started_at=DAY + timedelta(minutes=n)) for n in range(5)]

    # when they are read two at a time, following the next links
    seen, page = [], api.get("calls/?limit=2").json()
    assert page["previous"] is None
    while True:
        seen += [c["id"] for c in page["results"]]
        if not page["next"]:
            break
        page = api.get(_path(page["next"])).json()

    # then each comes once, newest first, and the last page links back
    assert seen == [str(c.pk) for c in reversed(made)]
    assert page["previous"]
    back = api.get(_path(page["previous"])).json()
    assert [c["id"] for c in back["results"]] == seen[2:4]


def test_a_call_in_the_list(api: Api, tenant_a: Tenant) -> None:
    call = make_call(
        _assistant(tenant_a), started_at=DAY, duration_s=42.5, end_reason="idle_timeout"
    )

    (row,) = api.get("calls/").json()["results"]

    assert row == {
        "id": str(call.pk),
        "persona": "assistant",
        "persona_name": "Assistant",
        "transport": "websocket",
        "source": "",
        "origin": "",
        "caller_number": "",
        "transferred_to": "",
        "key_name": "",
        "started_at": "2026-03-10T00:00:00Z",
        "ended_at": "2026-03-10T00:00:42.500000Z",
        "duration_s": 42.5,
        "end_reason": "idle_timeout",
    }


def test_filter_by_persona_and_days(api: Api, tenant_a: Tenant) -> None:
    # given calls of two personas on the 9th (late), 10th and 11th (early), UTC
    assistant = _assistant(tenant_a)
    sales = persona_create(org=tenant_a.org, name="Sales", instructions="x", greeting="Hi")
    before = make_call(assistant, started_at=DAY - timedelta(seconds=1))
    first = make_call(assistant, started_at=DAY)
    other = make_call(sales, started_at=DAY + timedelta(hours=12))
    last = make_call(assistant, started_at=DAY + timedelta(days=1, hours=23, minutes=59))
    after = make_call(assistant, started_at=DAY + timedelta(days=2))

    def ids(query: str) -> list[str]:
        response = api.get("calls/?" + query)
        assert response.status_code == 200, response.content
        return [c["id"] for c in response.json()["results"]]

    # then start/end include whole days, and the persona filter takes a slug
    assert ids("start=2026-03-10&end=2026-03-11") == [str(c.pk) for c in (last, other, first)]
    assert ids("start=2026-03-10&end=2026-03-11&persona=assistant") == [
        str(last.pk),
        str(first.pk),
    ]
    assert ids(f"persona={sales.slug}") == [str(other.pk)]
    assert ids("end=2026-03-09") == [str(before.pk)]
    assert ids("start=2026-03-12") == [str(after.pk)]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("start=2026-13-01", "start"),
        ("start=10/03/2026", "start"),
        ("end=yesterday", "end"),
        ("start=2026-03-11&end=2026-03-10", "end"),
        ("persona=no-such-persona", "persona"),
        ("persona=" + "x" * 100, "persona"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
        ("cursor=not-a-cursor", "cursor"),
    ],
)
def test_bad_filters_are_a_400_naming_the_parameter(
    api: Api, tenant_a: Tenant, query: str, param: str
) -> None:
    make_call(_assistant(tenant_a), started_at=DAY)

    response = api.get("calls/?" + query)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert error["message"].startswith(f"{param}: ")
    assert param in error["details"]


def test_another_orgs_persona_slug_filters_nothing_of_theirs(api: Api, tenant_b: Tenant) -> None:
    sales = persona_create(org=tenant_b.org, name="Bravo Sales", instructions="x", greeting="Hi")
    make_call(sales, started_at=DAY)

    response = api.get(f"calls/?persona={sales.slug}")

    assert response.status_code == 400
    assert "Bravo" not in response.content.decode()


def test_call_detail_has_transcript_and_turn_spans(api: Api, tenant_a: Tenant) -> None:
    # given a call with two exchanges, the second reply interrupted, recorded out of order
    call = make_call(
        _assistant(tenant_a),
        started_at=DAY,
        duration_s=20,
        items=[
            ("assistant", "Hello, how can I help?", 0.2, False),
            ("user", "When are you open?", 3.1, False),
            ("user", "And on Sunday?", 9.0, False),
            ("assistant", "We are open nine to", 4.0, True),
        ],
        turns=[
            {"v2v_ms": 640.5, "endpoint_ms": 200.0, "asr_ms": 55.0, "send_ms": 3.0},
            {"v2v_ms": 700.0, "llm_first_token_ms": 120.0},
        ],
    )

    response = api.get(f"calls/{call.pk}/")

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(call.pk) and body["duration_s"] == 20
    assert body["tool_calls"] == 0
    plain = {"tool": None}  # not an action
    assert body["transcript"] == [
        {
            "role": "assistant",
            "text": "Hello, how can I help?",
            "at_s": 0.2,
            "interrupted": False,
            **plain,
        },
        {"role": "user", "text": "When are you open?", "at_s": 3.1, "interrupted": False, **plain},
        {
            "role": "assistant",
            "text": "We are open nine to",
            "at_s": 4.0,
            "interrupted": True,
            **plain,
        },
        {"role": "user", "text": "And on Sunday?", "at_s": 9.0, "interrupted": False, **plain},
    ]
    first, second = body["turns"]
    assert first["response_id"] == "resp_0" and first["status"] == "completed"
    assert first["latency"]["v2v_ms"] == 640.5
    assert first["latency"]["endpoint_ms"] == 200.0
    assert first["latency"]["send_ms"] == 3.0  # kept in the spans blob only
    assert first["latency"]["tts_first_audio_ms"] is None
    assert second["latency"]["llm_first_token_ms"] == 120.0


def test_a_live_call_has_no_end(api: Api, tenant_a: Tenant) -> None:
    call = make_call(_assistant(tenant_a), started_at=DAY, duration_s=None)

    body = api.get(f"calls/{call.pk}/").json()

    assert body["ended_at"] is None and body["duration_s"] is None and body["end_reason"] == ""


@pytest.mark.parametrize(
    "path", ["calls/not-a-uuid/", "calls/------------------------------------/"]
)
def test_malformed_call_ids_are_404(api: Api, path: str) -> None:
    response = api.get(path)

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_unknown_call_id_is_404(api: Api) -> None:
    response = api.get("calls/7d0e5c6a-8f8e-4a35-9a3c-5b8d1a9f0b11/")

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_calls_need_a_key(db: None) -> None:
    assert Api(None).get("calls/").status_code == 401


def test_schema_has_calls_and_usage(db: None) -> None:
    schema = Api(None).get("schema/", headers={"Accept": "application/json"}).json()

    paths, components = schema["paths"], schema["components"]["schemas"]
    assert {"/api/v1/calls/", "/api/v1/calls/{id}/", "/api/v1/usage/"} <= set(paths)
    listing = paths["/api/v1/calls/"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"persona", "start", "end", "cursor"}
    page = components[
        listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[
            1
        ]
    ]
    assert {"next", "previous", "results"} <= set(page["properties"])
    assert {"transcript", "turns"} <= set(components["CallDetail"]["properties"])
    assert set(components["Usage"]["properties"]) >= {"seconds", "calls", "by_persona", "by_day"}

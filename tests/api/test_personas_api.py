from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.support.api import Api, error_of
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import SecretKey
from voiceapp.tenants.services import secret_key_create, secret_key_revoke

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "not_authenticated"),
        ({"Authorization": "Bearer sk_wrong"}, "invalid_api_key"),
        ({"Authorization": "Token abc"}, "invalid_authorization"),
        ({"Authorization": "Bearer"}, "invalid_authorization"),
        ({"Authorization": "Bearer a b"}, "invalid_authorization"),
    ],
)
def test_requests_without_a_valid_key_are_refused(
    db: None, headers: dict[str, str], code: str
) -> None:
    response = Client().get("/api/v1/personas/", headers=headers)

    assert response.status_code == 401
    assert error_of(response)["code"] == code
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_key_is_refused(tenant_a: Tenant) -> None:
    key, raw = secret_key_create(org=tenant_a.org, name="old")
    assert Api(raw).get("personas/").status_code == 200

    secret_key_revoke(key=key)

    response = Api(raw).get("personas/")
    assert response.status_code == 401
    assert error_of(response)["code"] == "invalid_api_key"


def test_list_and_create_personas(api: Api, tenant_a: Tenant) -> None:
    listed = api.get("personas/")
    assert listed.status_code == 200
    assert [p["slug"] for p in listed.json()] == ["assistant"]
    assert listed.json()[0]["voice"] == "en_US-joe-medium"

    created = api.post(
        "personas/",
        {
            "name": "Sales",
            "instructions": "Sell gently.",
            "greeting": "Hi",
            "temperature": 0.3,
            "allowed_origins": ["https://Shop.test"],
        },
    )

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["slug"] == "sales" and body["temperature"] == 0.3
    assert body["allowed_origins"] == ["https://shop.test"]
    assert Persona.objects.get(pk=body["id"]).org == tenant_a.org


def test_update_and_delete(api: Api) -> None:
    persona_id = api.get("personas/").json()[0]["id"]

    patched = api.patch(
        f"personas/{persona_id}/", {"end_of_turn_silence_ms": 800, "voice": "en_US-joe-medium"}
    )
    assert patched.status_code == 200
    assert patched.json()["end_of_turn_silence_ms"] == 800

    assert api.delete(f"personas/{persona_id}/").status_code == 204
    assert api.get(f"personas/{persona_id}/").status_code == 404


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "X", "instructions": "y", "greeting": "hi", "temperature": 9}, "temperature"),
        (
            {"name": "X", "instructions": "y", "greeting": "hi", "end_of_turn_silence_ms": 5},
            "end_of_turn_silence_ms",
        ),
        (
            {"name": "X", "instructions": "y", "greeting": "", "agent_speaks_first": True},
            "greeting",
        ),
        ({"name": "X", "instructions": "y", "greeting": "hi", "voice": "no-such-voice"}, "voice"),
        ({"name": "X", "instructions": "y", "greeting": "hi", "voice": "en\x00US"}, "voice"),
        ({"name": "X", "instructions": "y", "greeting": "hi", "slug": "assistant"}, "slug"),
        (
            {"name": "X", "instructions": "y", "greeting": "hi", "allowed_origins": ["nope"]},
            "allowed_origins",
        ),
        ({"instructions": "y"}, "name"),
        (
            {"name": "X", "instructions": "y", "greeting": "hi", "temperature": "warm"},
            "temperature",
        ),
    ],
)
def test_invalid_personas_get_json_errors(api: Api, payload: dict[str, Any], field: str) -> None:
    response = api.post("personas/", payload)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert field in error["details"], error


def test_malformed_json_is_a_clear_error(api: Api) -> None:
    response = api.client.post(
        "/api/v1/personas/", data="{not json", content_type="application/json", headers=api.headers
    )

    assert response.status_code == 400
    assert "JSON" in error_of(response)["message"]


@pytest.mark.parametrize(
    "body",
    [
        "[" * 6000,  # json.loads itself gives up with a RecursionError
        '{"name": "X", "instructions": ' + "[" * 40 + "]" * 40 + "}",
    ],
)
def test_deeply_nested_json_is_a_clear_error(api: Api, body: str) -> None:
    response = api.client.post(
        "/api/v1/personas/", data=body, content_type="application/json", headers=api.headers
    )

    assert response.status_code == 400
    assert "nested" in error_of(response)["message"]
    assert not Persona.objects.filter(name="X").exists()


@pytest.mark.parametrize("origin", ["http://[", "https://[::1", "http://a:b:c]"])
def test_unparseable_origins_are_a_field_error(api: Api, origin: str) -> None:
    payload = {"name": "X", "instructions": "y", "greeting": "hi", "allowed_origins": [origin]}

    response = api.post("personas/", payload)

    assert response.status_code == 400
    assert "allowed_origins" in error_of(response)["details"]
    assert not Persona.objects.filter(name="X").exists()


def test_voices_are_listed(api: Api) -> None:
    response = api.get("voices/")

    assert response.status_code == 200
    joe = next(v for v in response.json() if v["id"] == "en_US-joe-medium")
    assert joe == {
        "id": "en_US-joe-medium",
        "name": "Joe",
        "language": "en_US",
        "quality": "medium",
        "sample_rate": 22050,
    }


def test_openapi_schema_is_served(db: None) -> None:
    response = Client().get("/api/v1/schema/", headers={"Accept": "application/json"})

    assert response.status_code == 200
    text = response.content.decode()
    assert "/api/v1/personas/" in text and "/api/v1/voices/" in text and "secretKey" in text


def test_unknown_endpoint_is_a_json_404(api: Api) -> None:
    response = api.get("nothing-here/")

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_key_use_is_recorded(api: Api, tenant_a: Tenant) -> None:
    api.get("personas/")

    assert SecretKey.objects.get(org=tenant_a.org).last_used_at is not None


def test_oversized_body_is_refused_with_json(api: Api) -> None:
    huge = '{"name": "x", "instructions": "' + "a" * (3 * 1024 * 1024) + '"}'

    response = api.client.post(
        "/api/v1/personas/", data=huge, content_type="application/json", headers=api.headers
    )

    assert response.status_code in (400, 413)
    assert error_of(response)["code"]
    assert Persona.objects.filter(name="x").count() == 0


def test_instructions_over_the_limit_are_refused(api: Api) -> None:
    response = api.post(
        "personas/", {"name": "Long", "instructions": "a" * 20_001, "greeting": "hi"}
    )

    assert response.status_code == 400
    assert "instructions" in error_of(response)["details"]


def test_asr_model_is_a_persona_setting(api: Api) -> None:
    # given the default persona (tiny.en)
    persona_id = api.get("personas/").json()[0]["id"]
    assert api.get(f"personas/{persona_id}/").json()["asr_model"] == "tiny.en"
    # when the larger Whisper is chosen, it is kept; an unknown model is refused
    patched = api.patch(f"personas/{persona_id}/", {"asr_model": "base"})
    assert patched.status_code == 200 and patched.json()["asr_model"] == "base"
    refused = api.patch(f"personas/{persona_id}/", {"asr_model": "large-v3"})
    assert refused.status_code == 400
    assert Persona.objects.get(pk=persona_id).asr_model == "base"


def test_general_questions_are_a_persona_setting(api: Api) -> None:
    # given the default persona: it declines general knowledge on the embedded model
    persona_id = api.get("personas/").json()[0]["id"]
    assert api.get(f"personas/{persona_id}/").json()["general_questions"] is False
    # when a quiz host turns them on, it is kept
    patched = api.patch(f"personas/{persona_id}/", {"general_questions": True})
    assert patched.status_code == 200 and patched.json()["general_questions"] is True
    assert Persona.objects.get(pk=persona_id).general_questions is True
    # and a value that is not a yes or no is refused with the field named
    refused = api.patch(f"personas/{persona_id}/", {"general_questions": "sometimes"})
    assert refused.status_code == 400
    assert "general_questions" in error_of(refused)["details"]


def test_call_recording_is_a_persona_setting(api: Api) -> None:
    # given the default persona: calls are not recorded, recordings would be kept 30 days
    persona_id = api.get("personas/").json()[0]["id"]
    shown = api.get(f"personas/{persona_id}/").json()
    assert (shown["record_calls"], shown["recording_retention_days"]) == (False, 30)
    assert shown["recording_notice"] == ""
    # when recording is turned on with a notice and a week's retention, it is kept
    patched = api.patch(
        f"personas/{persona_id}/",
        {
            "record_calls": True,
            "recording_notice": "This call is recorded.",
            "recording_retention_days": 7,
        },
    )
    assert patched.status_code == 200 and patched.json()["record_calls"] is True
    # and a retention of 0 days is refused with the field named
    refused = api.patch(f"personas/{persona_id}/", {"recording_retention_days": 0})
    assert refused.status_code == 400
    assert "recording_retention_days" in error_of(refused)["details"]
    persona = Persona.objects.get(pk=persona_id)
    assert (persona.record_calls, persona.recording_retention_days) == (True, 7)
    assert persona.recording_notice == "This call is recorded."

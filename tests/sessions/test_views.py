"""Starting calls over HTTP: client secrets for servers, widget sessions for pages."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from billing.services import subscription_set_remaining
from sessions.auth import AuthError, grant_from_client_secret_sync
from sessions.ice import ice_servers, turn_credentials
from sessions.models import ClientSecret
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create
from voiceapp.tenants.services import publishable_key_create, publishable_key_revoke

pytestmark = pytest.mark.django_db


def post_secret(key: str | None, body: object, **extra: str) -> object:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client().post(
        "/v1/realtime/client_secrets",
        data=body,
        content_type="application/json",
        headers=headers,
        **extra,
    )


def test_client_secret_is_single_use_and_bound_to_the_persona(
    secret_key_a: str, tenant_a: Tenant
) -> None:
    response = post_secret(secret_key_a, {"session": {"type": "realtime", "model": "assistant"}})

    assert response.status_code == 200
    body = response.json()
    assert body["session"]["model"] == "assistant"
    with pytest.raises(AuthError) as wrong:
        grant_from_client_secret_sync(body["value"], model="other")
    assert wrong.value.code == "model_mismatch"
    grant = grant_from_client_secret_sync(body["value"], model="assistant")
    assert grant.org_id == tenant_a.org.pk and grant.persona_slug == "assistant"
    with pytest.raises(AuthError) as again:
        grant_from_client_secret_sync(body["value"], model=None)
    assert again.value.code == "client_secret_used"
    stored = ClientSecret.objects.get()
    assert body["value"] not in str(stored.__dict__)


def test_expired_client_secret_is_refused(secret_key_a: str) -> None:
    body = post_secret(secret_key_a, {"session": {"model": "assistant"}}).json()
    ClientSecret.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    with pytest.raises(AuthError) as exc:
        grant_from_client_secret_sync(body["value"], model="assistant")
    assert exc.value.code == "client_secret_expired"


@pytest.mark.parametrize(
    ("key", "body", "status", "code"),
    [
        (None, {"session": {"model": "assistant"}}, 401, "missing_api_key"),
        ("sk_wrong", {"session": {"model": "assistant"}}, 401, "invalid_api_key"),
        ("GOOD", {"session": {}}, 400, "missing_model"),
        ("GOOD", {"session": {"model": "bravo-bot"}}, 404, "model_not_found"),
        (
            "GOOD",
            {"session": {"model": "assistant"}, "expires_after": {"seconds": 999999}},
            400,
            "invalid_value",
        ),
        ("GOOD", {"session": "nope"}, 400, "invalid_value"),
        ("GOOD", "{broken", 400, "invalid_json"),
        ("GOOD", "[" * 6000, 400, "invalid_json"),  # RecursionError inside json.loads
        ("GOOD", {"session": {"model": "assist\x00ant"}}, 400, "invalid_value"),
        (
            "GOOD",
            {"session": {"model": "assistant", "instructions": "a\x00"}},
            400,
            "invalid_value",
        ),
        ("GOOD", '{"session": ' + '{"a": ' * 40 + "1" + "}" * 41, 400, "invalid_json"),
    ],
)
def test_client_secret_errors(
    secret_key_a: str, tenant_b: Tenant, key: str | None, body: object, status: int, code: str
) -> None:
    persona_create(
        org=tenant_b.org, name="Bravo", slug="bravo-bot", instructions="x", greeting="hi"
    )

    response = post_secret(secret_key_a if key == "GOOD" else key, body)

    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert not ClientSecret.objects.exists()


def widget(origin: str | None, key: str, persona: str = "assistant") -> object:
    headers = {"Origin": origin} if origin else {}
    return Client().post(
        "/v1/widget/sessions",
        data={"key": key, "persona": persona},
        content_type="application/json",
        headers=headers,
    )


def test_widget_session_for_an_allowed_origin(tenant_a: Tenant) -> None:
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )

    response = widget("https://shop.test", pk.key)

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "https://shop.test"
    body = response.json()
    assert body["client_secret"]["value"].startswith("ek_")
    assert body["persona"] == {"slug": "assistant", "name": "Assistant"}
    assert body["calls_url"] == "/v1/realtime/calls"
    assert ClientSecret.objects.get().origin == "https://shop.test"


def test_persona_origins_extend_the_keys(tenant_a: Tenant) -> None:
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )
    Persona.objects.filter(org=tenant_a.org).update(allowed_origins=["https://blog.test"])

    assert widget("https://blog.test", pk.key).status_code == 200


@pytest.mark.parametrize(
    ("origin", "key_kind", "persona", "status", "code"),
    [
        ("https://evil.test", "good", "assistant", 403, "origin_not_allowed"),
        (None, "good", "assistant", 403, "origin_required"),
        ("https://shop.test", "revoked", "assistant", 401, "invalid_publishable_key"),
        ("https://shop.test", "bad", "assistant", 401, "invalid_publishable_key"),
        ("https://shop.test", "good", "bravo-bot", 404, "model_not_found"),
        ("https://shop.test", "other_org", "assistant", 403, "origin_not_allowed"),
    ],
)
def test_widget_refusals(
    tenant_a: Tenant,
    tenant_b: Tenant,
    origin: str | None,
    key_kind: str,
    persona: str,
    status: int,
    code: str,
) -> None:
    persona_create(
        org=tenant_b.org, name="Bravo", slug="bravo-bot", instructions="x", greeting="hi"
    )
    good = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )
    revoked = publishable_key_create(
        org=tenant_a.org, name="old", allowed_origins=["https://shop.test"]
    )
    publishable_key_revoke(key=revoked)
    other = publishable_key_create(
        org=tenant_b.org, name="b", allowed_origins=["https://bravo.test"]
    )
    key = {"good": good.key, "revoked": revoked.key, "bad": "pk_nope", "other_org": other.key}[
        key_kind
    ]

    response = widget(origin, key, persona)

    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert not ClientSecret.objects.exists()


def test_widget_preflight_and_rate_limit(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SESSION_START_RATE_LIMIT_PER_MIN = 3
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )

    preflight = Client().options("/v1/widget/sessions", headers={"Origin": "https://shop.test"})
    assert preflight.status_code == 204
    assert "POST" in preflight["Access-Control-Allow-Methods"]
    codes = [widget("https://shop.test", pk.key).status_code for _ in range(4)]

    assert codes == [200, 200, 200, 429]
    assert ClientSecret.objects.count() == 3


def test_turn_credentials_match_coturn_rest_api() -> None:
    username, credential = turn_credentials(user="org1", secret="s3cret", ttl_s=600, now=1_000_000)

    assert username == "1000600:org1"
    expected = base64.b64encode(
        hmac.new(b"s3cret", b"1000600:org1", hashlib.sha1).digest()
    ).decode()
    assert credential == expected


def test_ice_servers_from_settings(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEBRTC_STUN_URLS = ["stun:stun.example.test:3478"]
    settings.TURN_URLS = ["turn:turn.example.test:3478?transport=udp"]
    settings.TURN_SECRET = "shared"

    servers = ice_servers(user="org7")

    assert servers[0] == {"urls": ["stun:stun.example.test:3478"]}
    assert servers[1]["urls"] == ["turn:turn.example.test:3478?transport=udp"]
    assert servers[1]["username"].endswith(":org7") and servers[1]["credential"]
    settings.TURN_SECRET = ""
    assert len(ice_servers(user="org7")) == 1


@pytest.mark.parametrize("size", [70 * 1024, 3 * 1024 * 1024])
def test_oversized_bodies_are_refused(secret_key_a: str, size: int) -> None:
    body = '{"session": {"model": "assistant", "instructions": "' + "a" * size + '"}}'

    response = Client().post(
        "/v1/realtime/client_secrets",
        data=body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key_a}"},
    )

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    assert not ClientSecret.objects.exists()


@pytest.mark.parametrize("body", ["[" * 6000, '{"key": ' + "[" * 40 + "]" * 40 + "}"])
def test_widget_refuses_deeply_nested_json(tenant_a: Tenant, body: str) -> None:
    response = Client().post(
        "/v1/widget/sessions",
        data=body,
        content_type="application/json",
        headers={"Origin": "https://shop.example"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert "nested" in response.json()["error"]["message"]
    assert not ClientSecret.objects.exists()


@pytest.mark.parametrize(
    "body", [{"key": "pk_\x00", "persona": "assistant"}, {"key": "pk_x", "persona": "a\x00"}]
)
def test_widget_refuses_nul_characters(tenant_a: Tenant, body: dict[str, str]) -> None:
    response = Client().post(
        "/v1/widget/sessions",
        data=body,
        content_type="application/json",
        headers={"Origin": "https://shop.example"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_value"


def widget_check(origin: str | None, key: str, persona: str = "assistant") -> object:
    headers = {"Origin": origin} if origin else {}
    return Client().post(
        "/v1/widget/check",
        data={"key": key, "persona": persona},
        content_type="application/json",
        headers=headers,
    )


def test_widget_check_answers_for_an_allowed_origin_and_mints_nothing(tenant_a: Tenant) -> None:
    # given a publishable key for shop.test
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )

    # when the widget on shop.test checks before asking for the microphone
    response = widget_check("https://shop.test", pk.key)

    # then it may go on, learns the persona's name, and no client secret exists
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "https://shop.test"
    assert response.json() == {"ok": True, "persona": {"slug": "assistant", "name": "Assistant"}}
    assert not ClientSecret.objects.exists()


@pytest.mark.parametrize(
    ("origin", "key_kind", "persona", "status", "code"),
    [
        ("https://evil.test", "good", "assistant", 403, "origin_not_allowed"),
        (None, "good", "assistant", 403, "origin_required"),
        ("https://shop.test", "revoked", "assistant", 401, "invalid_publishable_key"),
        ("https://shop.test", "good", "nobody", 404, "model_not_found"),
        ("https://shop.test", "good", "off", 403, "model_not_active"),
    ],
)
def test_widget_check_refuses_as_a_session_start_would(
    tenant_a: Tenant, origin: str | None, key_kind: str, persona: str, status: int, code: str
) -> None:
    # given a key for shop.test, a revoked one, and a switched-off persona
    good = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )
    revoked = publishable_key_create(
        org=tenant_a.org, name="old", allowed_origins=["https://shop.test"]
    )
    publishable_key_revoke(key=revoked)
    off = persona_create(org=tenant_a.org, name="Off", slug="off", instructions="x", greeting="Hi")
    Persona.objects.filter(pk=off.pk).update(is_active=False)
    key = {"good": good.key, "revoked": revoked.key}[key_kind]

    # when the widget checks
    check = widget_check(origin, key, persona)
    start = widget(origin, key, persona)

    # then the check refuses with the code and owner-facing message a start gets
    assert check.status_code == status == start.status_code
    assert check.json()["error"] == start.json()["error"]
    assert check.json()["error"]["code"] == code
    assert not ClientSecret.objects.exists()


def test_widget_check_refuses_when_the_included_time_is_used_up(tenant_a: Tenant) -> None:
    # given an organization with no call time left
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=0)

    # when the widget checks, then it learns so before any microphone is asked for
    response = widget_check("https://shop.test", pk.key)

    assert response.status_code == 402
    assert response.json()["error"]["code"] == "insufficient_quota"

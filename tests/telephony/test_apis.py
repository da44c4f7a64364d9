"""/api/v1/sip-trunks/ and /api/v1/phone-numbers/: what an organization's developer
sends, and the errors a mistake gets. Other organizations' objects:
tests/test_tenant_isolation.py."""

from __future__ import annotations

import pytest
from django.test import Client

from telephony.models import PhoneNumber, SipTrunk
from telephony.services import trunk_password_of
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


def api(secret_key_a: str) -> tuple[Client, dict[str, str]]:
    return Client(), {"Authorization": f"Bearer {secret_key_a}"}


def test_trunk_lifecycle_keeps_the_password_write_only(secret_key_a: str) -> None:
    client, auth = api(secret_key_a)
    created = client.post(
        "/api/v1/sip-trunks/",
        data={"name": "Office PBX", "username": "office-pbx", "password": "pbx-pass-123"},
        content_type="application/json",
        headers=auth,
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["uses_digest"] is True and "password" not in body
    assert b"pbx-pass-123" not in created.content
    trunk = SipTrunk.objects.get(pk=body["id"])
    assert trunk.password_encrypted != "pbx-pass-123"
    assert trunk_password_of(trunk) == "pbx-pass-123"

    changed = client.patch(
        f"/api/v1/sip-trunks/{trunk.pk}/",
        data={"allowed_addresses": ["203.0.113.7", "198.51.100.0/24"]},
        content_type="application/json",
        headers=auth,
    )
    assert changed.status_code == 200
    assert changed.json()["allowed_addresses"] == ["203.0.113.7", "198.51.100.0/24"]
    assert trunk_password_of(SipTrunk.objects.get(pk=trunk.pk)) == "pbx-pass-123"
    listed = client.get("/api/v1/sip-trunks/", headers=auth).json()
    assert [t["name"] for t in listed] == ["Office PBX"]
    assert client.delete(f"/api/v1/sip-trunks/{trunk.pk}/", headers=auth).status_code == 204
    assert not SipTrunk.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "No auth"}, None),  # neither addresses nor digest
        ({"name": "Bad", "allowed_addresses": ["not-an-ip"]}, "allowed_addresses"),
        ({"name": "Everyone", "allowed_addresses": ["0.0.0.0/0"]}, "allowed_addresses"),
        ({"name": "Half", "username": "half-digest"}, "password"),
        ({"name": "Wrong type", "allowed_addresses": "203.0.113.7"}, "allowed_addresses"),
    ],
)
def test_trunk_mistakes_are_named(secret_key_a: str, body: dict[str, object], field: str) -> None:
    client, auth = api(secret_key_a)
    response = client.post(
        "/api/v1/sip-trunks/", data=body, content_type="application/json", headers=auth
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    if field:
        assert error.get("param") == field or field in str(error), error
    assert not SipTrunk.objects.exists()


def test_numbers_are_normalized_routed_and_unique(secret_key_a: str, tenant_a: Tenant) -> None:
    client, auth = api(secret_key_a)
    persona = tenant_a.org.personas.get()
    trunk = client.post(
        "/api/v1/sip-trunks/",
        data={"name": "Carrier", "allowed_addresses": ["203.0.113.7"]},
        content_type="application/json",
        headers=auth,
    ).json()
    created = client.post(
        "/api/v1/phone-numbers/",
        data={"number": "+1 (555) 010-4477", "persona": persona.pk, "trunk": trunk["id"]},
        content_type="application/json",
        headers=auth,
    )
    assert created.status_code == 201, created.content
    assert created.json()["number"] == "+15550104477"
    sales = client.post(
        "/api/v1/phone-numbers/",
        data={"number": "Sales", "persona": persona.pk, "label": "front desk"},
        content_type="application/json",
        headers=auth,
    )
    assert sales.status_code == 201 and sales.json()["number"] == "sales"
    assert sales.json()["trunk"] is None

    again = client.post(
        "/api/v1/phone-numbers/",
        data={"number": "+15550104477", "persona": persona.pk},
        content_type="application/json",
        headers=auth,
    )
    assert again.status_code == 400 and "already in use" in again.content.decode()
    for bad in ("12", "call me", "+1555abc", "x" * 61):
        response = client.post(
            "/api/v1/phone-numbers/",
            data={"number": bad, "persona": persona.pk},
            content_type="application/json",
            headers=auth,
        )
        assert response.status_code == 400, bad
    moved = client.patch(
        f"/api/v1/phone-numbers/{sales.json()['id']}/",
        data={"label": "sales line", "trunk": trunk["id"]},
        content_type="application/json",
        headers=auth,
    )
    assert moved.status_code == 200 and moved.json()["trunk"] == trunk["id"]
    renumbered = client.patch(
        f"/api/v1/phone-numbers/{sales.json()['id']}/",
        data={"number": "support"},
        content_type="application/json",
        headers=auth,
    )
    assert renumbered.status_code == 400
    assert PhoneNumber.objects.count() == 2


def _outbound_trunk(tenant: Tenant, **extra: object) -> SipTrunk:
    from telephony.services import trunk_create

    return trunk_create(
        org=tenant.org,
        name="Carrier out",
        allowed_addresses=["203.0.113.7"],
        outbound_address="sip.carrier.example:5060",
        caller_id="+1 555 010 0123",
        **extra,
    )


def test_placing_a_call_queues_it(secret_key_a: str, tenant_a: Tenant) -> None:
    client, auth = api(secret_key_a)
    trunk = _outbound_trunk(tenant_a)
    assert trunk.caller_id == "+15550100123"
    placed = client.post(
        "/api/v1/calls/",
        data={"to": "+1 (555) 010-4477", "persona": "assistant", "variables": {"order": "A12"}},
        content_type="application/json",
        headers=auth,
    )
    assert placed.status_code == 202, placed.content
    body = placed.json()
    assert body["status"] == "queued" and body["to"] == "+15550104477"
    assert body["persona"] == "assistant" and body["trunk"] == trunk.pk
    assert body["variables"] == {"order": "A12"} and body["call"] is None
    got = client.get(f"/api/v1/outbound-calls/{body['id']}/", headers=auth)
    assert got.status_code == 200 and got.json()["status"] == "queued"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"to": "call me", "persona": "assistant"}, 400),
        ({"to": "sales", "persona": "assistant"}, 400),  # a SIP user, not a number
        ({"to": "+15550104477", "persona": "nobody"}, 404),
        ({"to": "+15550104477"}, 400),
        ({"to": "+15550104477", "persona": "assistant", "variables": "x"}, 400),
    ],
)
def test_bad_calls_are_refused_with_the_reason(
    secret_key_a: str, tenant_a: Tenant, body: dict[str, object], code: int
) -> None:
    client, auth = api(secret_key_a)
    _outbound_trunk(tenant_a)
    response = client.post(
        "/api/v1/calls/", data=body, content_type="application/json", headers=auth
    )
    assert response.status_code == code, response.content
    assert "error" in response.json()


def test_no_outbound_trunk_quiet_hours_and_rate(
    secret_key_a: str, tenant_a: Tenant, settings: object
) -> None:
    from datetime import time

    from telephony.models import OutboundCall
    from telephony.services import trunk_update

    client, auth = api(secret_key_a)
    call = {"to": "+15550104477", "persona": "assistant"}

    def place() -> object:
        return client.post(
            "/api/v1/calls/", data=call, content_type="application/json", headers=auth
        )

    none = place()
    assert none.status_code == 400 and "outbound address" in none.content.decode()
    trunk = _outbound_trunk(tenant_a)
    trunk_update(trunk, quiet_hours_start=time(0, 0), quiet_hours_end=time(23, 59, 59))
    quiet = place()
    assert quiet.status_code == 409 and quiet.json()["error"]["code"] == "quiet_hours"
    trunk_update(trunk, quiet_hours_start=None, quiet_hours_end=None)
    settings.OUTBOUND_CALLS_PER_MINUTE = 2  # type: ignore[attr-defined]
    assert [place().status_code for _ in range(3)] == [202, 202, 429]
    assert OutboundCall.objects.count() == 2

"""Each call records where it came from: the widget on which site, the API with
which secret key, or a member's test call on the dashboard."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from sessions.auth import CallGrant, grant_from_client_secret_sync, grant_from_secret_key_sync
from sessions.models import Call
from sessions.services import call_start
from tests.support.tenants import Tenant
from voiceapp.tenants.services import publishable_key_create, secret_key_create

pytestmark = pytest.mark.django_db


def start(grant: CallGrant, transport: str = "webrtc") -> Call:
    return call_start(call_id=str(uuid.uuid4()), grant=grant, transport=transport, client_info={})


def test_a_widget_call_records_the_site_and_the_key(tenant_a: Tenant) -> None:
    # given a publishable key named for the shop's site
    key = publishable_key_create(
        org=tenant_a.org, name="Shop site", allowed_origins=["https://shop.test"]
    )
    # when the widget on that site gets a client secret and the call starts with it
    response = Client().post(
        "/v1/widget/sessions",
        data={"key": key.key, "persona": "assistant"},
        content_type="application/json",
        headers={"Origin": "https://shop.test"},
    )
    grant = grant_from_client_secret_sync(response.json()["client_secret"]["value"], model=None)
    call = start(grant)

    # then the call is a widget call from that origin through that key
    assert (call.source, call.origin, call.key_name) == ("widget", "https://shop.test", "Shop site")


def test_api_calls_record_the_secret_key_directly_or_through_a_client_secret(
    tenant_a: Tenant,
) -> None:
    # given a secret key named "backend"
    _, raw = secret_key_create(org=tenant_a.org, name="backend")
    # when one call authenticates with it, and another with a client secret it made
    direct = start(grant_from_secret_key_sync(raw, model="assistant"), transport="websocket")
    made = Client().post(
        "/v1/realtime/client_secrets",
        data={"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    via_secret = start(grant_from_client_secret_sync(made.json()["value"], model="assistant"))

    # then both are API calls through "backend"
    assert (direct.source, direct.key_name) == ("api", "backend")
    assert (via_secret.source, via_secret.key_name) == ("api", "backend")


def test_a_dashboard_test_call_is_marked_and_listed_with_the_others(tenant_a: Tenant) -> None:
    # given a widget call and an API call already recorded
    persona = tenant_a.org.personas.get()
    key = publishable_key_create(
        org=tenant_a.org, name="Shop site", allowed_origins=["https://shop.test"]
    )
    _, raw = secret_key_create(org=tenant_a.org, name="backend")
    widget_grant = CallGrant(
        org_id=tenant_a.org.pk,
        persona_id=persona.pk,
        persona_slug=persona.slug,
        session_config={},
        origin="https://shop.test",
        publishable_key_id=key.pk,
    )
    start(widget_grant)
    start(grant_from_secret_key_sync(raw, model="assistant"))
    # when a member starts a test call from the dashboard
    response = tenant_a.client.post(reverse("dashboard:widget_test_session", args=[persona.pk]))
    test_call = start(
        grant_from_client_secret_sync(response.json()["client_secret"]["value"], model=None)
    )

    # then it is recorded as a test call
    assert (test_call.source, test_call.key_name) == ("test", "")
    # and the Calls page shows each call's source
    page = tenant_a.client.get(reverse("dashboard:call_list")).content.decode()
    assert page.count(">test</span> Dashboard") == 1
    assert ">widget</span> https://shop.test" in page and "(Shop site)" in page
    assert ">API</span> key “backend”" in page
    # and the test call's own page says so in its header
    detail = tenant_a.client.get(reverse("dashboard:call_detail", args=[test_call.pk]))
    assert ">test</span> Dashboard" in detail.content.decode()

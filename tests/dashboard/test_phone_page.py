"""The dashboard's Phone page: an owner adds a trunk and a number, sees them, gets
told what is wrong with a bad one, and deletes them."""

from __future__ import annotations

from datetime import time

import pytest

from telephony.models import PhoneNumber, SipTrunk
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


def test_owner_sets_up_a_number(tenant_a: Tenant) -> None:
    client = tenant_a.client
    page = client.get("/dashboard/phone/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "No trunks yet." in text and "Add a trunk first" in text
    assert "Add a number" not in text  # no trunk to deliver it yet

    response = client.post(
        "/dashboard/phone/trunks/new/",
        {
            "name": "Carrier",
            "allowed_addresses": "203.0.113.7\n198.51.100.0/24",
            "outbound_address": "sip.carrier.example:5080",
            "caller_id": "+1 555 010 0123",
            "quiet_hours_start": "21:00",
            "quiet_hours_end": "08:30",
            "time_zone": "Europe/Berlin",
        },
    )
    assert response.status_code == 302
    trunk = SipTrunk.objects.get()
    assert (trunk.quiet_hours_start, trunk.quiet_hours_end) == (time(21, 0), time(8, 30))
    assert trunk.time_zone == "Europe/Berlin"
    assert trunk.allowed_addresses == ["203.0.113.7", "198.51.100.0/24"]
    assert trunk.outbound_address == "sip.carrier.example:5080"
    assert trunk.caller_id == "+15550100123"

    persona = tenant_a.org.personas.get()
    response = client.post(
        "/dashboard/phone/numbers/new/",
        {"number": "+1 555 010 4477", "persona": persona.pk, "trunk": trunk.pk, "label": "Main"},
    )
    assert response.status_code == 302
    text = client.get("/dashboard/phone/").content.decode()
    assert "+15550104477" in text and persona.name in text and "Carrier" in text
    assert "198.51.100.0/24" in text and "sip.carrier.example:5080" in text
    assert "21:00\u201308:30" in text  # an en dash and "Europe/Berlin" in text
    assert "No outbound calls yet." in text


def test_mistakes_are_shown_on_the_page(tenant_a: Tenant) -> None:
    client = tenant_a.client
    response = client.post(
        "/dashboard/phone/trunks/new/", {"name": "Open", "allowed_addresses": "anywhere"}
    )
    assert response.status_code == 200
    assert "is not an IP address or network" in response.content.decode()
    response = client.post("/dashboard/phone/trunks/new/", {"name": "Nothing"})
    assert "needs allowed addresses" in response.content.decode()
    response = client.post(
        "/dashboard/phone/trunks/new/",
        {
            "name": "Night",
            "allowed_addresses": "203.0.113.9",
            "quiet_hours_start": "21:00",
        },
    )
    assert "Give both ends of the quiet hours" in response.content.decode()
    response = client.post(
        "/dashboard/phone/trunks/new/",
        {"name": "Night", "allowed_addresses": "203.0.113.9", "time_zone": "Mars/Olympus"},
    )
    assert "is not a time zone" in response.content.decode()
    assert not SipTrunk.objects.exists()
    client.post(
        "/dashboard/phone/trunks/new/", {"name": "Carrier", "allowed_addresses": "203.0.113.7"}
    )
    persona = tenant_a.org.personas.get()
    response = client.post(
        "/dashboard/phone/numbers/new/", {"number": "call me", "persona": persona.pk}
    )
    assert response.status_code == 200 and "international form" in response.content.decode()
    assert not PhoneNumber.objects.exists()


def test_delete(tenant_a: Tenant) -> None:
    client = tenant_a.client
    client.post(
        "/dashboard/phone/trunks/new/", {"name": "Carrier", "allowed_addresses": "203.0.113.7"}
    )
    trunk = SipTrunk.objects.get()
    persona = tenant_a.org.personas.get()
    client.post(
        "/dashboard/phone/numbers/new/",
        {"number": "sales", "persona": persona.pk, "trunk": trunk.pk},
    )
    number = PhoneNumber.objects.get()
    assert client.post(f"/dashboard/phone/trunks/{trunk.pk}/delete/").status_code == 302
    number.refresh_from_db()
    assert number.trunk is None  # the number stays, open to the org's other trunks
    assert client.post(f"/dashboard/phone/numbers/{number.pk}/delete/").status_code == 302
    assert not PhoneNumber.objects.exists() and not SipTrunk.objects.exists()

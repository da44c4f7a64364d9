"""Trunks and numbers in the Django admin, written through the services."""

from __future__ import annotations

import pytest
from django.test import Client

from telephony.models import PhoneNumber, SipTrunk
from telephony.services import trunk_password_of
from tests.support.tenants import Tenant, staff_client
from voiceapp.tenants.models import User

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser() -> Client:
    client = Client()
    client.force_login(
        User.objects.create_superuser(email="root@example.test", password="x-12345678")
    )
    return client


def test_superuser_adds_a_trunk_and_a_number(superuser: Client, tenant_a: Tenant) -> None:
    response = superuser.post(
        "/admin/telephony/siptrunk/add/",
        {
            "org": tenant_a.org.pk,
            "name": "Carrier",
            "addresses": "203.0.113.7\n198.51.100.0/24",
            "username": "carrier-a",
            "password": "carrier-pass-1",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    trunk = SipTrunk.objects.get()
    assert trunk.allowed_addresses == ["203.0.113.7", "198.51.100.0/24"]
    assert trunk_password_of(trunk) == "carrier-pass-1"

    persona = tenant_a.org.personas.get()
    response = superuser.post(
        "/admin/telephony/phonenumber/add/",
        {
            "org": tenant_a.org.pk,
            "number": "+1 555 010 7000",
            "persona": persona.pk,
            "trunk": trunk.pk,
            "label": "main line",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert PhoneNumber.objects.get().number == "+15550107000"


def test_mistakes_are_shown_and_nothing_saved(superuser: Client, tenant_a: Tenant) -> None:
    response = superuser.post(
        "/admin/telephony/siptrunk/add/",
        {"org": tenant_a.org.pk, "name": "Open", "addresses": "0.0.0.0/0", "enabled": "on"},
    )
    assert response.status_code == 200 and "allows every address" in response.content.decode()
    response = superuser.post(
        "/admin/telephony/siptrunk/add/",
        {"org": tenant_a.org.pk, "name": "Nothing", "enabled": "on"},
    )
    assert response.status_code == 200 and "needs allowed addresses" in response.content.decode()
    response = superuser.post(
        "/admin/telephony/phonenumber/add/",
        {"org": tenant_a.org.pk, "number": "call me", "persona": tenant_a.org.personas.get().pk},
    )
    assert response.status_code == 200 and "international form" in response.content.decode()
    assert not SipTrunk.objects.exists() and not PhoneNumber.objects.exists()


def test_staff_see_and_write_only_their_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from telephony import services

    services.trunk_create(org=tenant_b.org, name="Bravo trunk", allowed_addresses=["192.0.2.9"])
    client = staff_client(tenant_a.org, permissions_ending="siptrunk")
    listing = client.get("/admin/telephony/siptrunk/")
    assert listing.status_code == 200 and "Bravo trunk" not in listing.content.decode()
    response = client.post(
        "/admin/telephony/siptrunk/add/",
        {"name": "Alpha trunk", "addresses": "192.0.2.10", "enabled": "on"},
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert SipTrunk.objects.get(name="Alpha trunk").org == tenant_a.org

"""The API keys page: two create forms on one page, and revoking with a confirmation."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.support.tenants import Tenant
from voiceapp.tenants.models import PublishableKey, SecretKey
from voiceapp.tenants.services import publishable_key_create, secret_key_create

pytestmark = pytest.mark.django_db


def test_every_label_on_the_keys_page_names_its_own_field(tenant_a: Tenant) -> None:
    # given the keys page, with the secret and the publishable key forms
    html = tenant_a.client.get(reverse("dashboard:keys")).content.decode()

    # when its ids and labels are read
    ids = re.findall(r'\sid="([^"]+)"', html)
    labels = dict(re.findall(r'<label for="([^"]+)">([^<]+)</label>', html))

    # then ids are unique and each label points at a field of its own form
    assert len(ids) == len(set(ids))
    assert set(labels) <= set(ids)
    assert labels == {
        "id_secret_name": "Key name",
        "id_publishable_name": "Key name",
        "id_publishable_allowed_origins": "Allowed origins",
    }
    assert re.search(r'<input[^>]*name="name"[^>]*id="id_publishable_name"', html)


def test_a_bad_publishable_key_form_keeps_its_ids(tenant_a: Tenant) -> None:
    # when the publishable key form comes back with an error
    html = tenant_a.client.post(
        reverse("dashboard:publishable_key_create"), {"name": "site", "allowed_origins": "x"}
    ).content.decode()

    # then its fields still have their own ids
    assert 'id="id_publishable_allowed_origins"' in html
    assert 'id="id_secret_name"' in html


def test_revoking_a_secret_key_asks_first_and_says_what_happens_to_calls(
    tenant_a: Tenant,
) -> None:
    # given an active secret key, listed with a revoke link
    key, _ = secret_key_create(org=tenant_a.org, name="backend")
    url = reverse("dashboard:secret_key_revoke", args=[key.pk])
    assert f'href="{url}"' in tenant_a.client.get(reverse("dashboard:keys")).content.decode()

    # when the link is followed
    page = tenant_a.client.get(url)

    # then a confirmation page explains the effect, and nothing is revoked yet
    assert page.status_code == 200
    text = page.content.decode()
    assert "Revoke “backend”?" in text
    assert "Calls in progress that started with it end within about 2 seconds" in text
    assert SecretKey.objects.get(pk=key.pk).revoked_at is None
    # and its button revokes the key
    done = tenant_a.client.post(url, follow=True)
    assert SecretKey.objects.get(pk=key.pk).revoked_at is not None
    assert "calls in progress end within about 2 seconds" in done.content.decode()


def test_revoking_a_publishable_key_asks_first(tenant_a: Tenant, settings: object) -> None:
    # given a publishable key, and calls that check their key every 5 s
    settings.CALL_KEY_CHECK_S = 5.0  # type: ignore[attr-defined]
    key = publishable_key_create(org=tenant_a.org, name="site", allowed_origins=["https://a.test"])
    url = reverse("dashboard:publishable_key_revoke", args=[key.pk])

    # when the revoke link is followed
    page = tenant_a.client.get(url)

    # then the page names the sites that lose the widget and the real delay
    text = page.content.decode()
    assert "The widget stops working on <code>https://a.test</code>" in text
    assert "end within about 5 seconds" in text
    assert PublishableKey.objects.get(pk=key.pk).is_active
    tenant_a.client.post(url)
    assert not PublishableKey.objects.get(pk=key.pk).is_active


def test_a_revoked_key_has_no_confirmation_page(tenant_a: Tenant) -> None:
    key, _ = secret_key_create(org=tenant_a.org, name="old")
    tenant_a.client.post(reverse("dashboard:secret_key_revoke", args=[key.pk]))

    response = tenant_a.client.get(reverse("dashboard:secret_key_revoke", args=[key.pk]))

    assert response.status_code == 302 and response["Location"] == reverse("dashboard:keys")


def test_another_organizations_key_cannot_be_revoked(tenant_a: Tenant, tenant_b: Tenant) -> None:
    key, _ = secret_key_create(org=tenant_b.org, name="theirs")
    url = reverse("dashboard:secret_key_revoke", args=[key.pk])

    assert tenant_a.client.get(url).status_code == 404
    assert tenant_a.client.post(url).status_code == 404
    assert SecretKey.objects.get(pk=key.pk).revoked_at is None

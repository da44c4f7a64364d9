"""Django admin for LLM endpoints: the API key is write-only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.tenants import Tenant
from voiceapp.tenants.models import LLMEndpoint, User
from voiceapp.tenants.services import llm_endpoint_http_settings

pytestmark = pytest.mark.django_db

KEY = "sk-admin-entered-key-5555qrst"


@pytest.fixture
def superuser() -> Client:
    user = User.objects.create_superuser(email="root@example.test", password="pw-123456789")
    client = Client()
    client.force_login(user)
    return client


def form(tenant: Tenant, **overrides: str) -> dict[str, str]:
    data = {
        "org": str(tenant.org.pk),
        "name": "Admin endpoint",
        "base_url": "http://10.1.1.1:8000/v1",
        "model": "qwen2.5:7b",
        "api_key": KEY,
        "timeout_s": "12",
    }
    return {**data, **overrides}


def test_admin_stores_the_key_encrypted_and_never_shows_it(
    superuser: Client, tenant_a: Tenant
) -> None:
    response = superuser.post(reverse("admin:tenants_llmendpoint_add"), form(tenant_a))

    assert response.status_code == 302, response.content.decode()[-2000:]
    endpoint = LLMEndpoint.objects.get()
    assert endpoint.api_key_encrypted != KEY
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY
    change = reverse("admin:tenants_llmendpoint_change", args=[endpoint.pk])
    for url in (change, reverse("admin:tenants_llmendpoint_changelist")):
        page = superuser.get(url).content.decode()
        assert KEY not in page and endpoint.api_key_encrypted not in page
    assert "set, ending in qrst" in superuser.get(change).content.decode()


def test_admin_keeps_the_key_when_left_empty_and_removes_it_on_request(
    superuser: Client, tenant_a: Tenant
) -> None:
    superuser.post(reverse("admin:tenants_llmendpoint_add"), form(tenant_a))
    endpoint = LLMEndpoint.objects.get()
    change = reverse("admin:tenants_llmendpoint_change", args=[endpoint.pk])

    superuser.post(change, form(tenant_a, api_key="", model="other"))
    endpoint.refresh_from_db()
    assert endpoint.model == "other"
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY

    superuser.post(change, form(tenant_a, api_key="", clear_api_key="on"))
    endpoint.refresh_from_db()
    assert not endpoint.has_api_key


def test_admin_refuses_a_bad_url_on_the_form(superuser: Client, tenant_a: Tenant) -> None:
    response = superuser.post(
        reverse("admin:tenants_llmendpoint_add"), form(tenant_a, base_url="gopher://x/v1")
    )

    assert response.status_code == 200
    assert "Use an http:// or https:// URL" in response.content.decode()
    assert not LLMEndpoint.objects.exists()

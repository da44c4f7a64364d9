"""Dashboard: the Language models page (own endpoints, test connection) and the
persona's choice of endpoint."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from tests.dashboard.test_pages import persona_form
from tests.support.llm_server import LLMServer, closed_port_url
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import LLMEndpoint, Organization, Role, User
from voiceapp.tenants.services import llm_endpoint_create, llm_endpoint_http_settings

pytestmark = pytest.mark.django_db

KEY = "sk-dashboard-secret-key-9876wxyz"


def endpoint_form(**overrides: str) -> dict[str, str]:
    data = {
        "name": "vLLM on gpu-1",
        "base_url": "http://10.0.0.5:8000/v1",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "api_key": KEY,
        "timeout_s": "8",
    }
    return {**data, **overrides}


def test_the_page_labels_the_embedded_model_and_points_to_this_setting(tenant_a: Tenant) -> None:
    page = tenant_a.client.get(reverse("dashboard:llm_endpoints"))

    assert page.status_code == 200
    text = page.content.decode()
    assert "SmolLM2-135M" in text and "small demo model" in text
    assert "No endpoints yet" in text
    persona = Persona.objects.get(org=tenant_a.org)
    form = tenant_a.client.get(reverse("dashboard:persona_edit", args=[persona.pk])).content
    assert b"embedded demo model, SmolLM2-135M" in form
    assert reverse("dashboard:llm_endpoints").encode() in form


def test_adding_an_endpoint_never_shows_its_key_again(tenant_a: Tenant) -> None:
    response = tenant_a.client.post(
        reverse("dashboard:llm_endpoint_create"), endpoint_form(is_default="on"), follow=True
    )

    assert response.status_code == 200
    endpoint = LLMEndpoint.objects.get(org=tenant_a.org)
    assert endpoint.is_default and endpoint.timeout_s == 8.0
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY
    for url in (
        reverse("dashboard:llm_endpoints"),
        reverse("dashboard:llm_endpoint_edit", args=[endpoint.pk]),
    ):
        page = tenant_a.client.get(url).content.decode()
        assert KEY not in page
        assert endpoint.api_key_encrypted not in page
        assert "wxyz" in page  # only the last four, to recognise it
    assert "vLLM on gpu-1" in response.content.decode()


def test_bad_values_are_answered_on_the_form(tenant_a: Tenant) -> None:
    response = tenant_a.client.post(
        reverse("dashboard:llm_endpoint_create"),
        endpoint_form(base_url="ftp://10.0.0.5/v1", timeout_s="500"),
    )

    assert response.status_code == 200
    text = response.content.decode()
    assert "Use an http:// or https:// URL" in text
    assert "The timeout must be between 1 and 120 seconds." in text
    assert KEY not in text  # the password field is not filled back in
    assert not LLMEndpoint.objects.exists()


def test_editing_keeps_replaces_or_removes_the_key(tenant_a: Tenant) -> None:
    endpoint = llm_endpoint_create(
        org=tenant_a.org, name="box", base_url="http://10.0.0.5/v1", model="m", api_key=KEY
    )
    url = reverse("dashboard:llm_endpoint_edit", args=[endpoint.pk])

    tenant_a.client.post(url, endpoint_form(name="box", api_key="", model="other"))
    endpoint.refresh_from_db()
    assert endpoint.model == "other"
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY

    tenant_a.client.post(url, endpoint_form(name="box", api_key="", clear_api_key="on"))
    endpoint.refresh_from_db()
    assert not endpoint.has_api_key


def test_test_connection_reports_the_first_token_time(
    tenant_a: Tenant, llm_server: LLMServer
) -> None:
    endpoint = llm_endpoint_create(
        org=tenant_a.org,
        name="local llama",
        base_url=llm_server.base_url,
        model=llm_server.model,
        api_key=llm_server.api_key,
    )
    url = reverse("dashboard:llm_endpoint_test", args=[endpoint.pk])

    result = tenant_a.client.post(url, headers={"Accept": "application/json"}).json()
    assert result["ok"] is True, result
    assert result["first_token_ms"] > 0 and result["reply"].strip()

    # without JavaScript the outcome comes back as a message on the page
    page = tenant_a.client.post(url, follow=True).content.decode()
    assert "“local llama” answered: first token after" in page


def test_test_connection_explains_a_failure(tenant_a: Tenant) -> None:
    endpoint = llm_endpoint_create(
        org=tenant_a.org, name="gone", base_url=closed_port_url(), model="m"
    )

    result = tenant_a.client.post(
        reverse("dashboard:llm_endpoint_test", args=[endpoint.pk]),
        headers={"Accept": "application/json"},
    ).json()

    assert result["ok"] is False
    assert result["code"] == "llm_endpoint_unreachable"
    assert "cannot be reached" in result["error"]


def test_members_cannot_manage_endpoints(
    tenant_a: Tenant, member_of: Callable[[Organization, str], tuple[User, Client]]
) -> None:
    _, member = member_of(tenant_a.org, Role.MEMBER)

    assert member.get(reverse("dashboard:llm_endpoints")).status_code == 403
    assert member.post(reverse("dashboard:llm_endpoint_create"), endpoint_form()).status_code == 403
    assert not LLMEndpoint.objects.exists()


def test_a_persona_chooses_one_of_its_orgs_endpoints(tenant_a: Tenant, tenant_b: Tenant) -> None:
    ours = llm_endpoint_create(
        org=tenant_a.org, name="Ours", base_url="http://10.0.0.5/v1", model="m"
    )
    theirs = llm_endpoint_create(
        org=tenant_b.org, name="Theirs", base_url="http://10.0.0.6/v1", model="m"
    )
    persona = Persona.objects.get(org=tenant_a.org)
    url = reverse("dashboard:persona_edit", args=[persona.pk])

    page = tenant_a.client.get(url).content.decode()
    assert "Ours" in page and "Theirs" not in page

    refused = tenant_a.client.post(
        url, persona_form(persona.voice_id, slug="assistant", llm_endpoint=str(theirs.pk))
    )
    assert refused.status_code == 200 and b"Select a valid choice" in refused.content
    persona.refresh_from_db()
    assert persona.llm_endpoint is None

    tenant_a.client.post(
        url, persona_form(persona.voice_id, slug="assistant", llm_endpoint=str(ours.pk))
    )
    persona.refresh_from_db()
    assert persona.llm_endpoint == ours


def test_deleting_an_endpoint_returns_its_personas_to_the_default(tenant_a: Tenant) -> None:
    endpoint = llm_endpoint_create(
        org=tenant_a.org, name="Old", base_url="http://10.0.0.5/v1", model="m"
    )
    persona = Persona.objects.get(org=tenant_a.org)
    persona.llm_endpoint = endpoint
    persona.save()

    tenant_a.client.post(reverse("dashboard:llm_endpoint_delete", args=[endpoint.pk]))

    persona.refresh_from_db()
    assert persona.llm_endpoint is None
    assert not LLMEndpoint.objects.exists()

"""/api/v1/llm-endpoints/: the key is write-only, bad values get clear errors, and
"test" reports the first-token time of a real llama.cpp server."""

from __future__ import annotations

import pytest

from tests.api.test_personas_api import Api, error_of
from tests.support.llm_server import LLMServer
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import LLMEndpoint
from voiceapp.tenants.services import llm_endpoint_create, llm_endpoint_http_settings

pytestmark = pytest.mark.django_db

KEY = "sk-api-secret-key-0000abcd"


@pytest.fixture
def api(secret_key_a: str) -> Api:
    return Api(secret_key_a)


def body(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "Ollama",
        "base_url": "http://ollama:11434/v1",
        "model": "llama3.1:8b",
        "api_key": KEY,
    }
    return {**data, **overrides}


def test_create_and_read_never_return_the_key(api: Api, tenant_a: Tenant) -> None:
    created = api.post("llm-endpoints/", body(is_default=True))

    assert created.status_code == 201, created.json()
    data = created.json()
    assert "api_key" not in data and KEY not in created.content.decode()
    assert data["has_api_key"] is True and data["api_key_hint"] == "abcd"
    assert data["timeout_s"] == 10.0 and data["is_default"] is True
    endpoint = LLMEndpoint.objects.get(pk=data["id"], org=tenant_a.org)
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY
    for response in (api.get("llm-endpoints/"), api.get(f"llm-endpoints/{endpoint.pk}/")):
        assert response.status_code == 200
        assert KEY not in response.content.decode()
        assert endpoint.api_key_encrypted not in response.content.decode()


def test_patch_keeps_the_key_unless_given(api: Api, tenant_a: Tenant) -> None:
    pk = api.post("llm-endpoints/", body()).json()["id"]

    patched = api.patch(f"llm-endpoints/{pk}/", {"timeout_s": 4.5})
    assert patched.status_code == 200 and patched.json()["has_api_key"] is True

    cleared = api.patch(f"llm-endpoints/{pk}/", {"api_key": ""})
    assert cleared.json()["has_api_key"] is False
    assert LLMEndpoint.objects.get(pk=pk).api_key_encrypted == ""


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"base_url": "file:///etc/passwd"}, "base_url", "http:// or https://"),
        ({"timeout_s": 0}, "timeout_s", "between 1 and 120 seconds"),
        ({"model": ""}, "model", "blank"),
    ],
)
def test_bad_values_are_refused_with_the_field_named(
    api: Api, overrides: dict[str, object], field: str, message: str
) -> None:
    response = api.post("llm-endpoints/", body(**overrides))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert message in " ".join(error["details"][field])
    assert not LLMEndpoint.objects.exists()


def test_test_action_reports_the_first_token(
    api: Api, tenant_a: Tenant, llm_server: LLMServer
) -> None:
    pk = api.post(
        "llm-endpoints/",
        body(base_url=llm_server.base_url, model=llm_server.model, api_key=llm_server.api_key),
    ).json()["id"]

    result = api.post(f"llm-endpoints/{pk}/test/").json()

    assert result["ok"] is True, result
    assert result["first_token_ms"] > 0 and result["reply"].strip()
    assert result["code"] == "" and result["error"] == ""


def test_test_action_names_a_wrong_key(api: Api, llm_server: LLMServer) -> None:
    pk = api.post(
        "llm-endpoints/",
        body(base_url=llm_server.base_url, model=llm_server.model, api_key="sk-wrong-0000000000"),
    ).json()["id"]

    result = api.post(f"llm-endpoints/{pk}/test/").json()

    assert result["ok"] is False
    assert result["code"] == "llm_endpoint_unauthorized"
    assert "HTTP 401" in result["error"]


def test_personas_take_an_endpoint_of_their_own_org_only(
    api: Api, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    ours = llm_endpoint_create(org=tenant_a.org, name="a", base_url="http://a/v1", model="m")
    theirs = llm_endpoint_create(org=tenant_b.org, name="b", base_url="http://b/v1", model="m")
    persona = Persona.objects.get(org=tenant_a.org)

    refused = api.patch(f"personas/{persona.pk}/", {"llm_endpoint": theirs.pk})
    assert refused.status_code == 400
    assert "llm_endpoint" in error_of(refused)["details"]

    accepted = api.patch(f"personas/{persona.pk}/", {"llm_endpoint": ours.pk})
    assert accepted.status_code == 200 and accepted.json()["llm_endpoint"] == ours.pk
    reset = api.patch(f"personas/{persona.pk}/", {"llm_endpoint": None})
    assert reset.json()["llm_endpoint"] is None

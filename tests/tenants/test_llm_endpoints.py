"""Organizations' own LLM endpoints: validation, the encrypted key, which endpoint a
persona's calls use, and "Test connection" against a real llama.cpp server."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.support.llm_server import LLMServer, closed_port_url, silent_server
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.selectors import persona_llm_endpoint
from voiceapp.personas.services import persona_update
from voiceapp.tenants import crypto
from voiceapp.tenants.models import LLMEndpoint
from voiceapp.tenants.services import (
    llm_endpoint_check,
    llm_endpoint_create,
    llm_endpoint_delete,
    llm_endpoint_http_settings,
    llm_endpoint_update,
)

pytestmark = pytest.mark.django_db

KEY = "sk-live-0123456789abcdef"


def make(tenant: Tenant, **fields: object) -> LLMEndpoint:
    values: dict[str, object] = {
        "name": "GPU box",
        "base_url": "http://10.0.0.5:8000/v1",
        "model": "llama3.1:8b",
        "api_key": KEY,
    }
    values.update(fields)
    return llm_endpoint_create(org=tenant.org, **values)  # type: ignore[arg-type]


def test_the_key_is_stored_encrypted_and_only_its_last_four_kept(tenant_a: Tenant) -> None:
    endpoint = make(tenant_a)

    raw = LLMEndpoint.objects.filter(pk=endpoint.pk).values().get()
    assert KEY not in str(raw)
    assert raw["api_key_encrypted"] and raw["api_key_encrypted"] != KEY
    assert raw["api_key_hint"] == "cdef"
    assert endpoint.has_api_key
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY


def test_short_keys_get_no_hint(tenant_a: Tenant) -> None:
    endpoint = make(tenant_a, api_key="abc12345")

    assert endpoint.api_key_hint == ""
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == "abc12345"


def test_a_key_encrypted_under_another_secret_cannot_be_read(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    endpoint = make(tenant_a)
    settings.FIELD_ENCRYPTION_KEY = "a-completely-different-encryption-key"

    with pytest.raises(crypto.DecryptionError, match="Enter it again"):
        llm_endpoint_http_settings(endpoint=endpoint)
    check = llm_endpoint_check(endpoint=endpoint)
    assert not check.ok and check.code == "llm_endpoint_key_unreadable"


def test_old_keys_still_decrypt_after_rotation(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FIELD_ENCRYPTION_KEY = "first-encryption-key-0123456789"
    endpoint = make(tenant_a)
    settings.FIELD_ENCRYPTION_KEY = "second-encryption-key-987654321"
    settings.FIELD_ENCRYPTION_OLD_KEYS = ["first-encryption-key-0123456789"]

    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY
    # saving the key again encrypts it under the new key alone
    llm_endpoint_update(endpoint=endpoint, api_key=KEY)
    settings.FIELD_ENCRYPTION_OLD_KEYS = []
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://10.0.0.5/v1", "http:// or https://"),
        ("10.0.0.5:8000/v1", "http:// or https://"),
        ("http:///v1", "host name"),
        ("http://user:secret@10.0.0.5/v1", "API key in its own field"),
        ("http://10.0.0.5/v1?key=x", "query"),
        ("http://10.0.0.5:99999/v1", "not a valid URL"),
    ],
)
def test_bad_base_urls_are_refused_with_a_reason(tenant_a: Tenant, url: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make(tenant_a, base_url=url)

    assert message in " ".join(caught.value.message_dict["base_url"])
    assert not LLMEndpoint.objects.exists()


def test_host_names_without_a_domain_are_fine(tenant_a: Tenant) -> None:
    # the compose service "llm" and plain host names are how these servers are reached
    assert make(tenant_a, base_url="http://llm:8080/v1").base_url == "http://llm:8080/v1"


@pytest.mark.parametrize("timeout_s", [0.5, 121.0])
def test_timeout_out_of_range_is_refused(tenant_a: Tenant, timeout_s: float) -> None:
    with pytest.raises(ValidationError) as caught:
        make(tenant_a, timeout_s=timeout_s)

    assert caught.value.message_dict["timeout_s"] == [
        "The timeout must be between 1 and 120 seconds."
    ]


def test_keys_with_line_breaks_are_refused(tenant_a: Tenant) -> None:
    with pytest.raises(ValidationError) as caught:
        make(tenant_a, api_key="abc\r\nX-Injected: 1")

    assert "line breaks" in caught.value.message_dict["api_key"][0]


def test_names_are_unique_per_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    make(tenant_a)
    make(tenant_b)  # another org may use the same name

    with pytest.raises(ValidationError) as caught:
        make(tenant_a)
    assert "name" in caught.value.message_dict


def test_one_default_per_org(tenant_a: Tenant) -> None:
    first = make(tenant_a, name="one", is_default=True)
    second = make(tenant_a, name="two", is_default=True)

    first.refresh_from_db()
    assert (first.is_default, second.is_default) == (False, True)


def test_update_keeps_replaces_or_removes_the_key(tenant_a: Tenant) -> None:
    endpoint = make(tenant_a)

    llm_endpoint_update(endpoint=endpoint, model="qwen2.5:7b")
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == KEY

    llm_endpoint_update(endpoint=endpoint, api_key="sk-another-key-000000wxyz")
    assert llm_endpoint_http_settings(endpoint=endpoint).api_key == "sk-another-key-000000wxyz"
    assert endpoint.api_key_hint == "wxyz"

    llm_endpoint_update(endpoint=endpoint, api_key="")
    endpoint.refresh_from_db()
    assert not endpoint.has_api_key and endpoint.api_key_hint == ""


def test_update_refuses_unknown_fields(tenant_a: Tenant) -> None:
    with pytest.raises(ValidationError, match="Unknown endpoint fields: org"):
        llm_endpoint_update(endpoint=make(tenant_a), org=tenant_a.org)


def test_a_persona_uses_its_own_endpoint_else_the_org_default(tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    assert persona_llm_endpoint(persona=persona) is None  # the embedded workers

    default = make(tenant_a, name="default", is_default=True)
    assert persona_llm_endpoint(persona=persona) == default

    own = make(tenant_a, name="own")
    persona_update(persona=persona, llm_endpoint=own)
    assert persona_llm_endpoint(persona=persona) == own

    llm_endpoint_delete(endpoint=own)
    persona.refresh_from_db()
    assert persona.llm_endpoint is None
    assert persona_llm_endpoint(persona=persona) == default


def test_a_persona_cannot_use_another_orgs_endpoint(tenant_a: Tenant, tenant_b: Tenant) -> None:
    theirs = make(tenant_b)
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")

    with pytest.raises(ValidationError) as caught:
        persona_update(persona=persona, llm_endpoint=theirs)

    assert "llm_endpoint" in caught.value.message_dict
    persona.refresh_from_db()
    assert persona.llm_endpoint is None


# --- "Test connection" against real servers -------------------------------------


def test_check_reports_the_time_to_the_first_token(tenant_a: Tenant, llm_server: LLMServer) -> None:
    endpoint = make(
        tenant_a, base_url=llm_server.base_url, model=llm_server.model, api_key=llm_server.api_key
    )
    before = llm_server.completions()

    check = llm_endpoint_check(endpoint=endpoint)

    assert check.ok, check.error
    assert check.first_token_ms is not None and check.total_ms is not None
    assert 0 < check.first_token_ms <= check.total_ms
    assert check.reply.strip()
    assert llm_server.completions() == before + 1


def test_check_names_a_wrong_key(tenant_a: Tenant, llm_server: LLMServer) -> None:
    endpoint = make(
        tenant_a, base_url=llm_server.base_url, model=llm_server.model, api_key="sk-wrong-key-0000"
    )

    check = llm_endpoint_check(endpoint=endpoint)

    assert not check.ok
    assert check.code == "llm_endpoint_unauthorized"
    assert "refused the API key (HTTP 401)" in check.error
    assert "sk-wrong-key-0000" not in check.error


def test_check_names_a_wrong_path(tenant_a: Tenant, llm_server: LLMServer) -> None:
    endpoint = make(
        tenant_a,
        base_url=llm_server.base_url.removesuffix("/v1"),
        model=llm_server.model,
        api_key=llm_server.api_key,
    )

    check = llm_endpoint_check(endpoint=endpoint)

    assert (check.ok, check.code) == (False, "llm_endpoint_not_found")
    assert "usually ends in /v1" in check.error


def test_check_names_an_unreachable_endpoint(tenant_a: Tenant) -> None:
    check = llm_endpoint_check(endpoint=make(tenant_a, base_url=closed_port_url()))

    assert (check.ok, check.code) == (False, "llm_endpoint_unreachable")
    assert "cannot be reached" in check.error


def test_check_gives_up_on_a_silent_endpoint_after_its_timeout(tenant_a: Tenant) -> None:
    with silent_server() as url:
        check = llm_endpoint_check(endpoint=make(tenant_a, base_url=url, timeout_s=1.0))

    assert (check.ok, check.code) == (False, "llm_endpoint_timeout")
    assert "did not answer within 1 s" in check.error

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create, persona_update

pytestmark = pytest.mark.django_db

VALID = {"name": "Front desk", "instructions": "Book appointments.", "greeting": "Hello!"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", 2.5, "Temperature must be between 0 and 2."),
        ("temperature", -0.1, "Temperature must be between 0 and 2."),
        ("end_of_turn_silence_ms", 50, "End-of-turn silence must be between 100 and 3000 ms."),
        ("end_of_turn_silence_ms", 4000, "End-of-turn silence must be between 100 and 3000 ms."),
        ("vad_threshold", 1.0, "The VAD threshold must be between 0.05 and 0.95."),
        ("max_reply_tokens", 5000, "At most 1024 tokens per reply"),
        ("idle_timeout_s", 1, "The idle timeout must be between 5 and 3600 seconds."),
        ("max_call_duration_s", 10, "The maximum call duration must be between 30 s and 4 h."),
        ("slug", "has spaces", "Enter a valid “slug”"),
    ],
)
def test_out_of_range_settings_are_refused_with_a_clear_message(
    tenant_a: Tenant, field: str, value: object, message: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        persona_create(org=tenant_a.org, **{**VALID, field: value})

    assert field in exc.value.message_dict
    assert any(message in m for m in exc.value.message_dict[field])
    assert not Persona.objects.filter(org=tenant_a.org, name="Front desk").exists()


def test_greeting_required_when_the_agent_speaks_first(tenant_a: Tenant) -> None:
    with pytest.raises(ValidationError) as exc:
        persona_create(org=tenant_a.org, **{**VALID, "greeting": "", "agent_speaks_first": True})
    assert exc.value.message_dict["greeting"] == [
        "A greeting is needed when the agent speaks first."
    ]

    persona = persona_create(
        org=tenant_a.org, **{**VALID, "greeting": "", "agent_speaks_first": False}
    )
    assert persona.pk


def test_slug_is_unique_per_org_only(tenant_a: Tenant, tenant_b: Tenant) -> None:
    persona_create(org=tenant_a.org, **VALID, slug="desk")

    with pytest.raises(ValidationError) as exc:
        persona_create(org=tenant_a.org, **VALID, slug="desk")
    assert "slug" in exc.value.message_dict
    assert persona_create(org=tenant_b.org, **VALID, slug="desk").org == tenant_b.org


def test_slug_is_derived_from_the_name(tenant_a: Tenant) -> None:
    first = persona_create(org=tenant_a.org, **VALID)
    second = persona_create(org=tenant_a.org, **VALID)

    assert (first.slug, second.slug) == ("front-desk", "front-desk-2")


def test_allowed_origins_are_validated_and_normalized(tenant_a: Tenant) -> None:
    persona = persona_create(org=tenant_a.org, **VALID, allowed_origins=["https://Shop.test/"])
    assert persona.allowed_origins == ["https://shop.test"]

    with pytest.raises(ValidationError) as exc:
        persona_update(persona=persona, allowed_origins=["shop.test/path"])
    assert "allowed_origins" in exc.value.message_dict


def test_unknown_fields_and_org_cannot_be_set(tenant_a: Tenant, tenant_b: Tenant) -> None:
    persona = persona_create(org=tenant_a.org, **VALID)

    with pytest.raises(ValidationError, match="Unknown persona fields: org"):
        persona_update(persona=persona, org=tenant_b.org)
    persona.refresh_from_db()
    assert persona.org == tenant_a.org

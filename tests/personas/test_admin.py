from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.conftest import Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create
from voiceapp.tenants.models import Membership, Role, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_of_a(tenant_a: Tenant) -> Client:
    from django.contrib.auth.models import Permission

    user = User.objects.create_user(
        email="staff@alpha.test", password="pw-123456789", is_staff=True
    )
    user.user_permissions.set(Permission.objects.filter(codename__endswith="_persona"))
    Membership.objects.create(org=tenant_a.org, user=user, role=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return client


def test_staff_see_only_the_org_they_act_for(
    staff_of_a: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    persona_create(org=tenant_b.org, name="Bravo secret bot", instructions="x", greeting="hi")

    page = staff_of_a.get(reverse("admin:personas_persona_changelist"))

    assert page.status_code == 200
    assert b"Assistant" in page.content
    assert b"Bravo secret bot" not in page.content
    other = Persona.objects.get(org=tenant_b.org, slug="assistant")
    assert (
        staff_of_a.get(reverse("admin:personas_persona_change", args=[other.pk])).status_code == 302
    )


def test_staff_create_personas_in_their_org(staff_of_a: Client, tenant_a: Tenant) -> None:
    response = staff_of_a.post(
        reverse("admin:personas_persona_add"),
        {
            "name": "Admin made",
            "slug": "admin-made",
            "is_active": "on",
            "instructions": "Be brief.",
            "greeting": "Hello",
            "agent_speaks_first": "on",
            "voice": tenant_a.org.personas.get().voice_id,
            "language": "en",
            "llm_backend": "local",
            "llm_model": "",
            "temperature": "0.5",
            "max_reply_tokens": "100",
            "vad_threshold": "0.5",
            "end_of_turn_silence_ms": "600",
            "interruptions_enabled": "on",
            "idle_timeout_s": "60",
            "max_call_duration_s": "600",
            "allowed_origins": "[]",
        },
    )

    assert response.status_code == 302, response.content[:2000]
    assert Persona.objects.get(slug="admin-made").org == tenant_a.org


def test_admin_validation_messages(staff_of_a: Client, tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org)
    response = staff_of_a.post(
        reverse("admin:personas_persona_change", args=[persona.pk]),
        {
            "name": persona.name,
            "slug": persona.slug,
            "instructions": "x",
            "greeting": "hi",
            "voice": persona.voice_id,
            "language": "en",
            "llm_backend": "local",
            "temperature": "3",
            "max_reply_tokens": "100",
            "vad_threshold": "0.5",
            "end_of_turn_silence_ms": "20",
            "idle_timeout_s": "60",
            "max_call_duration_s": "600",
            "allowed_origins": "[]",
        },
    )

    assert response.status_code == 200
    assert b"Temperature must be between 0 and 2." in response.content
    assert b"End-of-turn silence must be between 100 and 3000 ms." in response.content

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.tenants import Tenant, staff_client
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, Persona, PersonaFact
from voiceapp.personas.services import persona_create, persona_fact_create
from voiceapp.tenants.models import Membership, Role, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_of_a(tenant_a: Tenant) -> Client:
    return staff_client(tenant_a.org, permissions_ending="_persona")


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
            "asr_model": "base",
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
            "record_calls": "on",
            "recording_notice": "",
            "recording_retention_days": "14",
        },
    )

    assert response.status_code == 302, response.content[:2000]
    made = Persona.objects.get(slug="admin-made")
    assert made.org == tenant_a.org
    assert made.asr_model == "base"  # the speech-recognition model is chosen in the admin too
    assert made.record_calls and made.recording_retention_days == 14  # and call recording


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


@pytest.fixture
def fact_staff_of_a(tenant_a: Tenant) -> Client:
    """Staff of A who may edit personas and their facts."""
    from django.contrib.auth.models import Permission

    user = User.objects.create_user(
        email="facts@alpha.test", password="pw-123456789", is_staff=True
    )
    user.user_permissions.set(Permission.objects.filter(codename__regex=r"_(persona|personafact)$"))
    Membership.objects.create(org=tenant_a.org, user=user, role=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return client


def persona_change_data(persona: Persona, facts: list[PersonaFact], *new: dict[str, str]) -> dict:
    """The persona's change form as the admin page posts it, with its facts inline."""
    data = {
        "name": persona.name,
        "slug": persona.slug,
        "is_active": "on",
        "instructions": persona.instructions,
        "greeting": persona.greeting,
        "agent_speaks_first": "on",
        "voice": persona.voice_id,
        "language": "en",
        "asr_model": persona.asr_model,
        "llm_backend": "local",
        "llm_model": "",
        "temperature": "0.6",
        "max_reply_tokens": "120",
        "vad_threshold": "0.5",
        "end_of_turn_silence_ms": "500",
        "interruptions_enabled": "on",
        "idle_timeout_s": "60",
        "max_call_duration_s": "600",
        "allowed_origins": "[]",
        "recording_retention_days": str(persona.recording_retention_days),
        "facts-TOTAL_FORMS": str(len(facts) + len(new)),
        "facts-INITIAL_FORMS": str(len(facts)),
        "facts-MIN_NUM_FORMS": "0",
        "facts-MAX_NUM_FORMS": str(MAX_FACTS_PER_PERSONA),
    }
    for i, fact in enumerate(facts):
        data.update(
            {
                f"facts-{i}-id": str(fact.pk),
                f"facts-{i}-persona": str(persona.pk),
                f"facts-{i}-question": fact.question,
                f"facts-{i}-answer": fact.answer,
                f"facts-{i}-position": str(fact.position),
            }
        )
    for j, row in enumerate(new, start=len(facts)):
        data.update({f"facts-{j}-persona": str(persona.pk), f"facts-{j}-position": "0"})
        data.update({f"facts-{j}-{k}": v for k, v in row.items()})
    return data


def test_facts_are_an_inline_of_the_persona(fact_staff_of_a: Client, tenant_a: Tenant) -> None:
    # given a persona with one fact
    persona = Persona.objects.get(org=tenant_a.org)
    kept = persona_fact_create(persona=persona, question="Hours?", answer="9 to 5.")
    gone = persona_fact_create(persona=persona, answer="Closed in August.")
    url = reverse("admin:personas_persona_change", args=[persona.pk])
    page = fact_staff_of_a.get(url)
    assert page.status_code == 200
    assert b"Knowledge: facts the agent answers from" in page.content and b"9 to 5." in page.content
    # when the admin edits one fact, deletes another and adds a new one
    data = persona_change_data(
        persona, [kept, gone], {"question": "Where?", "answer": " Main Street 1. "}
    )
    data.update({"facts-0-answer": "8 to 4.", "facts-1-DELETE": "on"})
    response = fact_staff_of_a.post(url, data)
    # then the facts are saved through the services (new ones go last, trimmed)
    assert response.status_code == 302, response.content[:3000]
    assert list(persona.facts.values_list("question", "answer", "position")) == [
        ("Hours?", "8 to 4.", 0),
        ("Where?", "Main Street 1.", 1),
    ]


def test_inline_facts_are_validated(fact_staff_of_a: Client, tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org)
    url = reverse("admin:personas_persona_change", args=[persona.pk])

    response = fact_staff_of_a.post(
        url, persona_change_data(persona, [], {"question": "When?", "answer": "x" * 1001})
    )

    assert response.status_code == 200
    assert b"Ensure this value has at most 1000 characters" in response.content
    assert not persona.facts.exists()


def test_inline_refuses_more_than_the_cap(fact_staff_of_a: Client, tenant_a: Tenant) -> None:
    persona = Persona.objects.get(org=tenant_a.org)
    PersonaFact.objects.bulk_create(
        PersonaFact(persona=persona, answer=f"F{i}", position=i)
        for i in range(MAX_FACTS_PER_PERSONA)
    )
    facts = list(persona.facts.all())

    response = fact_staff_of_a.post(
        reverse("admin:personas_persona_change", args=[persona.pk]),
        persona_change_data(persona, facts, {"answer": "One too many."}),
    )

    assert response.status_code == 200
    assert f"can hold at most {MAX_FACTS_PER_PERSONA} facts".encode() in response.content
    assert persona.facts.count() == MAX_FACTS_PER_PERSONA


def test_inline_cannot_touch_another_orgs_facts(
    fact_staff_of_a: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    persona = Persona.objects.get(org=tenant_a.org)
    foreign = persona_fact_create(persona=Persona.objects.get(org=tenant_b.org), answer="Bravo.")
    data = persona_change_data(persona, [foreign])
    data["facts-0-persona"] = str(persona.pk)
    data["facts-0-answer"] = "Hijacked."

    response = fact_staff_of_a.post(
        reverse("admin:personas_persona_change", args=[persona.pk]), data
    )

    # the foreign row is not in the formset's queryset: Django ignores it
    assert response.status_code in (200, 302)
    foreign.refresh_from_db()
    assert foreign.answer == "Bravo." and foreign.persona.org == tenant_b.org
    assert not PersonaFact.objects.filter(answer="Hijacked.").exists()
    other = Persona.objects.get(org=tenant_b.org)
    assert (
        fact_staff_of_a.get(reverse("admin:personas_persona_change", args=[other.pk])).status_code
        == 302
    )

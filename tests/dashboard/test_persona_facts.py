"""The Knowledge section of a persona's page: add, edit, reorder and delete facts."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.tenants import Tenant
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, Persona, PersonaFact
from voiceapp.personas.services import persona_fact_create
from voiceapp.tenants.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    return Persona.objects.get(org=tenant_a.org, slug="assistant")


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


def answers(persona: Persona) -> list[str]:
    return list(persona.facts.values_list("answer", flat=True))


def test_empty_knowledge_explains_what_facts_are_for(tenant_a: Tenant, persona: Persona) -> None:
    page = tenant_a.client.get(reverse("dashboard:persona_edit", args=[persona.pk]))

    assert page.status_code == 200
    text = page_text(page)
    assert 'id="knowledge"' in text and "No facts yet." in text
    assert "says it doesn't know and offers to take a message" in text
    assert "0 of 200 facts" in text
    assert "Add fact" in text
    # without the take_message action, the page does not promise a message
    persona.actions = []
    persona.save()
    page = tenant_a.client.get(reverse("dashboard:persona_edit", args=[persona.pk]))
    assert "offers to take a message" not in page_text(page)
    assert "action on, it also offers to take one" in page_text(page)


def test_new_persona_page_says_facts_come_after_creating(tenant_a: Tenant) -> None:
    page = tenant_a.client.get(reverse("dashboard:persona_create"))

    assert "Once the persona is created, give it facts" in page_text(page)


def test_add_a_fact(tenant_a: Tenant, persona: Persona) -> None:
    # when the owner adds a fact
    response = tenant_a.client.post(
        reverse("dashboard:persona_fact_create", args=[persona.pk]),
        {"question": "When are you open?", "answer": "Monday to Friday, 9 to 5."},
        follow=True,
    )
    # then it is stored and shown in the Knowledge section
    assert response.redirect_chain[-1][0].endswith(f"/personas/{persona.pk}/#knowledge")
    assert answers(persona) == ["Monday to Friday, 9 to 5."]
    text = page_text(response)
    assert "Fact added." in text
    assert "When are you open?" in text and "Monday to Friday, 9 to 5." in text
    assert "1 of 200 facts" in text and "No facts yet." not in text


def test_a_member_can_add_facts(member_of: Any, tenant_a: Tenant, persona: Persona) -> None:
    _, client = member_of(tenant_a.org, Role.MEMBER)

    client.post(
        reverse("dashboard:persona_fact_create", args=[persona.pk]), {"answer": "Main Street 1."}
    )

    assert answers(persona) == ["Main Street 1."]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"question": "When?", "answer": ""}, "Write the answer the agent should give."),
        ({"question": "When?", "answer": "   "}, "Write the answer the agent should give."),
        ({"answer": "x" * 1001}, "at most 1000 characters"),
        ({"question": "q" * 301, "answer": "Fine."}, "at most 300 characters"),
    ],
)
def test_bad_facts_show_errors_on_the_page(
    tenant_a: Tenant, persona: Persona, data: dict[str, str], message: str
) -> None:
    response = tenant_a.client.post(
        reverse("dashboard:persona_fact_create", args=[persona.pk]), data
    )

    assert response.status_code == 200
    text = page_text(response)
    assert message in text and 'class="errorlist"' in text
    assert 'id="knowledge"' in text  # the persona's page, with its settings form intact
    assert f'value="{persona.name}"' in text
    assert not persona.facts.exists()


def test_the_cap_shows_a_notice_and_refuses_more(tenant_a: Tenant, persona: Persona) -> None:
    PersonaFact.objects.bulk_create(
        PersonaFact(persona=persona, answer=f"F{i}", position=i)
        for i in range(MAX_FACTS_PER_PERSONA)
    )

    page = page_text(tenant_a.client.get(reverse("dashboard:persona_edit", args=[persona.pk])))
    refused = tenant_a.client.post(
        reverse("dashboard:persona_fact_create", args=[persona.pk]), {"answer": "One more."}
    )

    assert "the most it can" in page and "Add fact" not in page
    assert f"already has {MAX_FACTS_PER_PERSONA} facts" in page_text(refused)
    assert persona.facts.count() == MAX_FACTS_PER_PERSONA


def test_edit_a_fact(tenant_a: Tenant, persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, question="Hours?", answer="9 to 5.")
    url = reverse("dashboard:persona_fact_edit", args=[persona.pk, fact.pk])

    form = tenant_a.client.get(url)
    assert form.status_code == 200
    assert "Edit fact" in page_text(form) and "9 to 5." in page_text(form)

    bad = tenant_a.client.post(url, {"question": "Hours?", "answer": ""})
    assert "Write the answer the agent should give." in page_text(bad)

    saved = tenant_a.client.post(url, {"question": "When are you open?", "answer": "8 to 4."})
    assert saved.status_code == 302
    fact.refresh_from_db()
    assert (fact.question, fact.answer) == ("When are you open?", "8 to 4.")


def test_delete_a_fact(tenant_a: Tenant, persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, answer="Gone soon.")
    url = reverse("dashboard:persona_fact_delete", args=[persona.pk, fact.pk])

    assert tenant_a.client.get(url).status_code == 405
    response = tenant_a.client.post(url, follow=True)

    assert "Fact deleted." in page_text(response)
    assert not persona.facts.exists()


def test_move_facts_up_and_down(tenant_a: Tenant, persona: Persona) -> None:
    a, b, c = (persona_fact_create(persona=persona, answer=x) for x in "ABC")

    def move(fact: PersonaFact, direction: str) -> None:
        url = reverse("dashboard:persona_fact_move", args=[persona.pk, fact.pk])
        assert tenant_a.client.post(url, {"direction": direction}).status_code == 302

    move(c, "up")
    assert answers(persona) == ["A", "C", "B"]
    move(a, "down")
    assert answers(persona) == ["C", "A", "B"]
    move(c, "up")  # already first: nothing changes
    move(b, "down")  # already last
    assert answers(persona) == ["C", "A", "B"]
    move(a, "sideways")
    assert answers(persona) == ["C", "A", "B"]


def test_another_personas_fact_is_not_reachable_through_this_persona(
    tenant_a: Tenant, persona: Persona
) -> None:
    other = Persona.objects.create(
        org=tenant_a.org, name="Other", slug="other", instructions="x", voice=persona.voice
    )
    fact = persona_fact_create(persona=other, answer="Other's fact.")

    client: Client = tenant_a.client
    edit = client.get(reverse("dashboard:persona_fact_edit", args=[persona.pk, fact.pk]))
    delete = client.post(reverse("dashboard:persona_fact_delete", args=[persona.pk, fact.pk]))

    assert edit.status_code == 404 and delete.status_code == 404
    assert answers(other) == ["Other's fact."]
